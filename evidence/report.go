package evidence

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strings"
	"time"
)

// junitSuites is the JUnit XML document.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Package    string          `xml:"package,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name       string          `xml:"name,attr"`
	Classname  string          `xml:"classname,attr"`
	Status     string          `xml:"status,attr"`
	Time       string          `xml:"time,attr"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Failure    *junitMessage   `xml:"failure,omitempty"`
	Skipped    *junitMessage   `xml:"skipped,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// junitXML renders the results as JUnit XML, one testcase per spec with its
// rule IDs as a property.
func junitXML(m Manifest, results []SpecResult) ([]byte, error) {
	var total time.Duration
	suite := junitSuite{
		Name:      "sandboxkit conformance",
		Package:   "github.com/sandboxkit/sandboxkit/conformance",
		Timestamp: m.StartedAt.UTC().Format(time.RFC3339),
		Properties: []junitProperty{
			{"mode", string(m.Mode)}, {"run_id", m.RunID}, {"kit_version", m.KitVersion}, {"kit_revision", m.KitRevision},
			{"server", strings.TrimSpace(m.Server.Name + " " + m.Server.Version)}, {"transport", m.Transport},
			{"provider_id", m.ProviderID}, {"region", m.Region}, {"api_host", m.APIHost},
		},
	}
	for _, r := range results {
		d := time.Duration(r.DurationMS) * time.Millisecond
		total += d
		c := junitCase{
			Name:       fmt.Sprintf("[%s] %s", r.ID, r.Title),
			Classname:  r.Family,
			Status:     r.State,
			Time:       seconds(d),
			Properties: []junitProperty{{"spec_id", r.ID}, {"rules", strings.Join(r.Rules, " ")}},
		}
		suite.Tests++
		switch {
		case r.Passed():
		case r.Skipped():
			suite.Skipped++
			c.Skipped = &junitMessage{Message: r.Message}
		default:
			suite.Failures++
			c.Failure = &junitMessage{Message: firstLine(r.Message), Type: r.State, Text: r.Message}
		}
		suite.Cases = append(suite.Cases, c)
	}
	suite.Time = seconds(total)
	doc := junitSuites{Name: suite.Name, Tests: suite.Tests, Failures: suite.Failures, Skipped: suite.Skipped, Time: suite.Time, Suites: []junitSuite{suite}}
	var b bytes.Buffer
	b.WriteString(xml.Header)
	enc := xml.NewEncoder(&b)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("evidence: junit: %w", err)
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// summaryMarkdown renders the Markdown summary.
func summaryMarkdown(m Manifest, results []SpecResult) []byte {
	var b bytes.Buffer
	t := Count(results)
	if m.Mode == ModeCloud {
		fmt.Fprintf(&b, "# sandboxkit conformance evidence: CLOUD run against %s\n\n", orDash(m.APIHost))
	} else {
		fmt.Fprintf(&b, "# sandboxkit conformance evidence: LOOPBACK run (fake provider)\n\n")
		fmt.Fprintf(&b, "> This run used the kit's fake provider. It shows how the server behaves against a\n")
		fmt.Fprintf(&b, "> faithful fake; it proves nothing about a real provider (VERIFY-1) and never\n")
		fmt.Fprintf(&b, "> verifies as cloud evidence.\n\n")
	}
	fmt.Fprintf(&b, "**%d passed, %d failed, %d skipped.**\n\n", t.Passed, t.Failed, t.Skipped)
	writeFindings(&b, m)
	b.WriteString("## Provenance\n\n| field | value |\n|---|---|\n")
	row := func(k, v string) { fmt.Fprintf(&b, "| %s | %s |\n", k, mdCell(orDash(v))) }
	row("mode", string(m.Mode))
	row("run ID", m.RunID)
	row("kit", m.KitVersion+" ("+orDash(m.KitRevision)+")")
	row("Go", m.GoVersion)
	row("server", strings.TrimSpace(m.Server.Name+" "+m.Server.Version))
	row("transport", m.Transport)
	row("provider", m.ProviderID)
	row("region", m.Region)
	row("API host", m.APIHost)
	row("started", m.StartedAt.UTC().Format(time.RFC3339))
	row("ended", m.EndedAt.UTC().Format(time.RFC3339))
	if c := m.Cleanup; c != nil {
		row("sandboxes", fmt.Sprintf("%d created and tracked; %d already gone when checked; %d destroyed by the kit; %d not destroyed",
			c.Tracked, c.Gone, c.DestroyedByKit, len(c.Failed)))
		if len(c.NotCreated) > 0 {
			row("not created by the run", strings.Join(c.NotCreated, " ")+" (the server reported them as created; they started before the run; left alone)")
		}
	}
	b.WriteString("\n## Results\n\n| spec | rules | state | duration |\n|---|---|---|---|\n")
	var skipped []string
	for _, r := range results {
		if r.Skipped() {
			skipped = append(skipped, r.ID)
			continue
		}
		state := r.State
		if r.Failed() {
			state = "**" + strings.ToUpper(r.State) + "**"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s s |\n", r.ID, mdCell(strings.Join(r.Rules, " ")), state, seconds(time.Duration(r.DurationMS)*time.Millisecond))
	}
	var failed []SpecResult
	for _, r := range results {
		if r.Failed() {
			failed = append(failed, r)
		}
	}
	if len(failed) > 0 {
		b.WriteString("\n## Failures\n\n")
		for _, r := range failed {
			fmt.Fprintf(&b, "- `%s` (%s): %s\n", r.ID, strings.Join(r.Rules, " "), mdCell(firstLine(r.Message)))
		}
	}
	if len(skipped) > 0 {
		fmt.Fprintf(&b, "\n## Not run (%d)\n\n", len(skipped))
		for _, id := range skipped {
			fmt.Fprintf(&b, "`%s` ", id)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n## Files\n\n`manifest.json` (provenance), `results.json`, `junit.xml`, `transcript.jsonl` (every MCP call, redacted),\n")
	b.WriteString("`server.log` (the server's log, redacted), `SHA256SUMS`. Check with `sandboxkit evidence verify DIR`;\n")
	b.WriteString("view with `sandboxkit evidence render DIR`.\n")
	return b.Bytes()
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}

func mdCell(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	return strings.ReplaceAll(s, "|", `\|`)
}

// writeFindings states the run's status and lists its findings, which no
// spec's result shows.
func writeFindings(b *bytes.Buffer, m Manifest) {
	if m.Status != "" {
		fmt.Fprintf(b, "**Status: %s.**\n\n", m.Status)
	}
	if len(m.Findings) == 0 {
		return
	}
	fmt.Fprintf(b, "## Findings\n\nReported once for the run; a run with a finding does not pass, even when every spec did.\n\n| rule | tools | what | specs |\n|---|---|---|---|\n")
	for _, f := range m.Findings {
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", mdCell(f.Rule), mdCell(strings.Join(f.Tools, ", ")), mdCell(f.Text), mdCell(strings.Join(f.Specs, ", ")))
	}
	b.WriteString("\n")
}
