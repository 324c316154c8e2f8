package conformance

import (
	"fmt"
	"io"
	"strings"

	"github.com/onsi/ginkgo/v2"

	"github.com/sandboxkit/sandboxkit/conformance/internal/summary"
)

// bannerEntry is the report entry holding the run's banner, so that a
// parallel run's parent prints it once from the merged report.
const bannerEntry = "sandboxkit banner"

// banner describes what the kit found: the server, the contract tools it
// advertises (and under which name, when the tool map renames them), the
// contract tools it lacks and the tools the contract does not know.
func (r *runState) banner(all []string) string {
	var b strings.Builder
	name := "the server"
	if r.server != nil {
		name = fmt.Sprintf("%s %s", r.server.Name, r.server.Version)
	}
	fmt.Fprintf(&b, "sandboxkit conformance %s: %s (%s)\n", Version, name, r.cfg.Kind())
	b.WriteString(r.processBanner())
	b.WriteString(r.e2b1Line())
	b.WriteString(r.e2b1SDKLine())
	var found, mapped, missing []string
	for _, c := range ContractTools() {
		switch n := r.cfg.toolName(c); {
		case r.tools[c] == nil:
			missing = append(missing, c)
		case n != c:
			mapped = append(mapped, c+" = "+n)
		default:
			found = append(found, c)
		}
	}
	known := map[string]bool{}
	for _, c := range ContractTools() {
		known[r.cfg.toolName(c)] = true
	}
	var other []string
	for _, n := range all {
		if !known[n] {
			other = append(other, n)
		}
	}
	line := func(label string, names []string) {
		if len(names) == 0 {
			fmt.Fprintf(&b, "  %-8s none\n", label)
			return
		}
		fmt.Fprintf(&b, "  %-8s %d: %s\n", label, len(names), strings.Join(names, ", "))
	}
	line("found", found)
	line("mapped", mapped)
	line("missing", missing)
	if len(other) > 0 {
		line("unknown", other)
	}
	if len(missing) > 0 {
		b.WriteString("  specs that need a missing tool are skipped (with --require-all they fail)\n")
	}
	if hint := suggestProfile(r.cfg, r.tools, r.servesLegacy); hint != "" {
		fmt.Fprintf(&b, "  profile  %s\n", hint)
	}
	return b.String()
}

// WriteBanner prints the banner a run recorded in its report (the tools
// found, mapped and missing), for a report merged from several processes;
// it prints nothing when the report has none.
func WriteBanner(w io.Writer, r ginkgo.Report) {
	for _, sr := range r.SpecReports {
		for _, e := range sr.ReportEntries {
			if e.Name == bannerEntry {
				fmt.Fprint(w, e.Value.String())
				return
			}
		}
	}
}

// The summary's words for a run that could not start and for the leak
// check's failures.
const (
	runErrorPrefix = summary.RunErrorPrefix
	leakPrefix     = summary.LeakPrefix
)
