package conformance

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/onsi/ginkgo/v2"

	"github.com/sandboxkit/sandboxkit/conformance/internal/summary"
	"github.com/sandboxkit/sandboxkit/fakeprovider"
)

// A call that names a sandbox and does its work in another one (a write
// that lands in the wrong sandbox) is a defect whatever else the spec
// found: the fake's journal shows which sandbox's daemon each request
// went to. Judged only where the journal cannot mix calls: the call was
// the spec's only one in flight from start to end, and it succeeded
// without any daemon request to the sandbox it named while its daemon
// requests went to another.

// wrongSandboxRule is the rule a call on the wrong sandbox breaks.
const wrongSandboxRule = summary.WrongSandboxRule

// daemonTools are the tools whose work is done by a sandbox's daemon.
var daemonTools = map[string]bool{
	"run_command": true, "run_code": true, "read_file": true, "write_file": true, "list_files": true,
	"upload_file": true, "download_file": true, "start_background_command": true,
}

// callWatch is what the kit noted when a call began, to judge where it
// acted when it ends.
type callWatch struct {
	tool, named string
	gen         uint64
	alone       bool
	journalLen  int
}

// beginCall notes that a call begins; for a daemon tool naming a sandbox,
// against the fake, it returns the watch that endCall judges.
func (tc *TestContext) beginCall(tool string, args json.RawMessage) *callWatch {
	tc.mu.Lock()
	tc.callGen++
	tc.inflight++
	w := &callWatch{tool: tool, gen: tc.callGen, alone: tc.inflight == 1}
	tc.mu.Unlock()
	if tc.Fake == nil || !daemonTools[tool] {
		return w
	}
	var m struct {
		SandboxID string `json:"sandbox_id"`
	}
	if json.Unmarshal(args, &m) == nil {
		w.named = m.SandboxID
	}
	w.journalLen = tc.Fake.Journal().Len()
	return w
}

// endCall notes that a call ended, and records a call that acted on
// another sandbox than it named.
func (tc *TestContext) endCall(w *callWatch, r *Result) {
	tc.mu.Lock()
	tc.inflight--
	alone := w.alone && tc.callGen == w.gen
	tc.mu.Unlock()
	if !alone || w.named == "" || r.Err != nil || r.IsError {
		return
	}
	// Only the call's own entries are copied: the whole journal grows
	// with the spec, and every daemon call would copy it again.
	entries, ok := tc.Fake.Journal().Since(w.journalLen)
	if !ok {
		return // the spec reset the journal meanwhile
	}
	if other := otherSandbox(w.named, entries); other != "" {
		tc.mu.Lock()
		tc.wrongSandbox = append(tc.wrongSandbox, fmt.Sprintf("%s named sandbox %s, but its daemon requests went to sandbox %s", tc.Config.toolName(w.tool), w.named, other))
		tc.mu.Unlock()
	}
}

// otherSandbox returns the sandbox whose daemon the entries reached when
// none reached the named one, or "".
func otherSandbox(named string, entries []fakeprovider.Entry) string {
	other := ""
	for _, e := range entries {
		switch {
		case !e.Envd || e.SandboxID == "":
		case sameSandbox(e.SandboxID, named):
			return ""
		case other == "":
			other = e.SandboxID
		}
	}
	return other
}

// sameSandbox reports whether two spellings name one sandbox: bare or as
// provider:id, with or without an e2b 1.x client suffix (<id>-<clientID>).
func sameSandbox(a, b string) bool {
	short := func(s string) string {
		if _, id, ok := strings.Cut(s, ":"); ok {
			return id
		}
		return s
	}
	a, b = short(a), short(b)
	return a == b || strings.HasPrefix(a, b+"-") || strings.HasPrefix(b, a+"-")
}

// checkWrongSandbox fails the spec once for its calls that acted on
// another sandbox than they named, each a defect of its own. It runs as a
// cleanup node of its own, so that neither it nor the leak check hides
// the other.
func (tc *TestContext) checkWrongSandbox() {
	tc.mu.Lock()
	wrong := tc.wrongSandbox
	tc.mu.Unlock()
	if len(wrong) == 0 {
		return
	}
	for _, w := range wrong {
		ginkgo.AddReportEntry(summary.EntryDefect, summary.DefectValue(wrongSandboxRule, w), ginkgo.ReportEntryVisibilityNever)
	}
	// One line: the summary groups it under its own rule by the prefix.
	ginkgo.Fail(fmt.Sprintf("%s: %s", summary.WrongSandboxPrefix, strings.Join(wrong, "; ")))
}
