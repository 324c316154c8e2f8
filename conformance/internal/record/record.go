// Package record turns a finished conformance run into its evidence bundle
// (package evidence): it numbers and shortens each spec's transcript,
// redacts what the run saw, and writes the bundle. The conformance package
// says what the run was ([Run]); this package is called once, after the
// run, and keeps no state of its own.
package record

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime/debug"

	"github.com/sandboxkit/sandboxkit/conformance/cloudstate"
	"github.com/sandboxkit/sandboxkit/evidence"
)

// Run is a finished run as its evidence bundle tells it.
type Run struct {
	// Manifest is the run's manifest; Write completes its totals, status
	// and checksums (evidence.Write).
	Manifest evidence.Manifest
	// Results are the specs' outcomes in catalog order.
	Results []evidence.SpecResult
	// Transcripts are each spec's calls by spec ID.
	Transcripts map[string][]Call
	// ServerLog is what the server wrote while the run went.
	ServerLog string
	// Secrets redacts every secret the run saw.
	Secrets *evidence.Redactor
}

// Call is one tool call of a spec, as the kit made it.
type Call struct {
	Session   int
	Tool      string
	Probe     bool
	Arguments json.RawMessage
	Result    string
}

// Write writes run's bundle to dir and returns the bundle's mode.
func Write(dir string, run Run) (evidence.Mode, error) {
	return run.Manifest.Mode, evidence.Write(dir, Bundle(run), run.Secrets)
}

// Bundle is run's evidence: its transcript follows the results' order,
// each call numbered within its spec, each long string shortened.
func Bundle(run Run) *evidence.Bundle {
	var tr []evidence.Exchange
	for _, res := range run.Results {
		for i, c := range run.Transcripts[res.ID] {
			tr = append(tr, evidence.Exchange{
				Spec: res.ID, Seq: i + 1, Session: c.Session, Tool: c.Tool, Probe: c.Probe,
				Arguments: elideJSON(c.Arguments, run.Secrets), Result: elideJSON([]byte(c.Result), run.Secrets),
			})
		}
	}
	return &evidence.Bundle{Manifest: run.Manifest, Results: run.Results, Transcript: tr, ServerLog: run.ServerLog}
}

// Cleanup tells what became of the sandboxes a cloud run created; failed
// are those the kit could not destroy.
func Cleanup(rr cloudstate.RunRecord, failed []string) *evidence.Cleanup {
	c := &evidence.Cleanup{Tracked: len(rr.Sandboxes), Failed: failed}
	for _, s := range rr.Sandboxes {
		switch s.State {
		case cloudstate.SandboxGone:
			c.Gone++
		case cloudstate.SandboxDestroyed:
			c.DestroyedByKit++
		case cloudstate.SandboxNotCreated:
			c.NotCreated = append(c.NotCreated, s.ID)
		}
	}
	return c
}

// maxString bounds each string of a transcript in a bundle: longer ones
// (base64 payloads, big outputs) keep their head and tail.
const maxString = 4096

// elideJSON redacts and shortens every long string of a JSON value; text
// that is not JSON becomes one (shortened) JSON string.
func elideJSON(raw []byte, red *evidence.Redactor) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		data, _ := json.Marshal(elideString(string(raw), red))
		return data
	}
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			return elideString(x, red)
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		case map[string]any:
			for k := range x {
				x[k] = walk(x[k])
			}
		}
		return v
	}
	v = walk(v)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		data, _ := json.Marshal(elideString(string(raw), red))
		return data
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

func elideString(s string, red *evidence.Redactor) string {
	if len(s) <= maxString {
		return s
	}
	s = red.RedactString(s) // before cutting, so no secret is cut in half
	if len(s) <= maxString {
		return s
	}
	head, tail := cutUTF8(s, 1024), s[len(s)-256:]
	for len(tail) > 0 && !isRuneStart(tail[0]) {
		tail = tail[1:]
	}
	return fmt.Sprintf("%s...[%d bytes elided from the evidence]...%s", head, len(s)-len(head)-len(tail), tail)
}

func cutUTF8(s string, n int) string {
	for n > 0 && n < len(s) && !isRuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// KitRevision is the VCS revision the kit was built from, the module
// version, or "unknown".
func KitRevision() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	var rev string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev != "" {
		if dirty {
			rev += "+dirty"
		}
		return rev
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return "module " + v
	}
	return "unknown"
}
