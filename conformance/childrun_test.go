package conformance

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/types"
)

// Tests that run the kit in a child process of this test binary (Ginkgo
// runs one suite per process) read what the child did from its Ginkgo JSON
// report, not from its output: a failure names each failed spec with its
// message.

// childReportEnv names the file a child kit run writes its JSON report to.
const childReportEnv = "SANDBOXKIT_CHILD_REPORT"

// childMessageLines bounds how many lines of one spec's failure message a
// parent prints.
const childMessageLines = 25

// childRun is what one child run of this test binary left.
type childRun struct {
	out []byte
	err error
	// reports is the child's Ginkgo JSON report; nil when it wrote none.
	reports []types.Report
}

// runChild runs the test named test in a child process of this test
// binary with env added to the environment, and reads its report.
func runChild(t *testing.T, test string, env ...string) *childRun {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	return runChildCmd(t, cmd)
}

// runChildCmd runs cmd, a child run of this test binary whose environment
// is set, with the report the child writes (childOptions), and reads it.
func runChildCmd(t *testing.T, cmd *exec.Cmd) *childRun {
	t.Helper()
	report := filepath.Join(t.TempDir(), "report.json")
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, childReportEnv+"="+report)
	out, err := cmd.CombinedOutput()
	r := &childRun{out: out, err: err}
	if data, rerr := os.ReadFile(report); rerr == nil {
		if jerr := json.Unmarshal(data, &r.reports); jerr != nil {
			t.Logf("the child's report %s does not parse: %v", report, jerr)
			r.reports = nil
		}
	}
	return r
}

// childOptions returns opts (a new one when nil) with the JSON report the
// parent asked for, in a child run.
func childOptions(opts *RunOptions) *RunOptions {
	if opts == nil {
		opts = &RunOptions{}
	}
	if path := os.Getenv(childReportEnv); path != "" {
		opts.JSONReport = path
	}
	return opts
}

// childFailure is one failed spec (or suite node) of a child run.
type childFailure struct {
	id, state, message, location string
}

// specIDLabel matches a spec ID among a spec's labels.
var specIDLabel = regexp.MustCompile(`^[a-z]+\.[a-z0-9-]+$`)

// failures returns the failed specs and suite nodes of the child's report.
func (r *childRun) failures() []childFailure {
	var out []childFailure
	for _, rep := range r.reports {
		for _, sr := range rep.SpecReports {
			if !sr.State.Is(types.SpecStateFailureStates) {
				continue
			}
			id := sr.LeafNodeText
			for _, l := range sr.Labels() {
				if specIDLabel.MatchString(l) {
					id = l
					break
				}
			}
			if id == "" {
				id = sr.LeafNodeType.String()
			}
			out = append(out, childFailure{id: id, state: sr.State.String(), message: sr.Failure.Message, location: sr.Failure.Location.String()})
		}
	}
	return out
}

// explain says what went wrong in the child: each failed spec with its
// message, from the report; when the child left no report (it crashed, or
// never started the kit), its exit and the end of its output.
func (r *childRun) explain() string {
	var b strings.Builder
	fails := r.failures()
	switch {
	case len(r.reports) == 0:
		fmt.Fprintf(&b, "the child run left no report (%v): it ended before the kit did; the end of its output:\n%s", r.err, lastOutputLines(r.out, 40))
		return b.String()
	case len(fails) == 0 && r.err != nil:
		fmt.Fprintf(&b, "the child run failed (%v) with no failed spec in its report; the end of its output:\n%s", r.err, lastOutputLines(r.out, 40))
		return b.String()
	}
	fmt.Fprintf(&b, "%d failed:\n", len(fails))
	for _, f := range fails {
		fmt.Fprintf(&b, "--- %s (%s, %s)\n%s\n", f.id, f.state, f.location, indentLines(firstLines(f.message, childMessageLines), "    "))
	}
	for _, rep := range r.reports {
		for _, reason := range rep.SpecialSuiteFailureReasons {
			fmt.Fprintf(&b, "--- suite: %s\n", reason)
		}
	}
	return b.String()
}

// firstLines returns the first n lines of s, saying how many it left out.
func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n\t "), "\n")
	if len(lines) <= n {
		return strings.Join(lines, "\n")
	}
	return strings.Join(lines[:n], "\n") + fmt.Sprintf("\n... %d more lines", len(lines)-n)
}

// lastOutputLines returns the last n lines of out.
func lastOutputLines(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{"..."}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// indentLines prefixes every line of s with prefix.
func indentLines(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}
