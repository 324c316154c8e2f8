package conformance

import (
	"slices"
	"strings"
	"testing"
)

// A Process spec reaches the process target when the run has one, and the
// run's target otherwise; other specs always reach the run's target.
func TestTargetOfProcessSpecs(t *testing.T) {
	inproc, proc := &inProcessTarget{}, &stdioTarget{}
	r := &runState{cfg: NewConfig(), target: inproc}
	if got := r.targetOf(Spec{Process: true}); got != inproc {
		t.Errorf("a Process spec without a process target reaches %T, want the run's", got)
	}
	r.process = proc
	if got := r.targetOf(Spec{Process: true}); got != proc {
		t.Errorf("a Process spec reaches %T, want the process target", got)
	}
	if got := r.targetOf(Spec{}); got != inproc {
		t.Errorf("another spec reaches %T, want the run's", got)
	}
}

// The specs that need a server process are the crash sweep, the shutdown
// by signal and the by-ID connection spec, and the in-process banner names
// them with the command that ran them.
func TestProcessSpecsAndBanner(t *testing.T) {
	ids := processSpecIDs()
	for _, want := range []string{"cleanup.crash-restart-sweeps", "cleanup.shutdown", "delegation.by-id-releases-connections"} {
		if !slices.Contains(ids, want) {
			t.Errorf("process specs %v lack %s", ids, want)
		}
	}
	r := &runState{cfg: NewConfig(), processCmd: []string{"/bin/sandboxkit", "serve"}}
	r.process = &stdioTarget{}
	if b := r.processBanner(); !strings.Contains(b, "/bin/sandboxkit serve") || !strings.Contains(b, "cleanup.crash-restart-sweeps") {
		t.Errorf("banner %q does not name the command and the specs", b)
	}
	r.process = nil
	if b := r.processBanner(); !strings.Contains(b, "skipped") {
		t.Errorf("banner without a process target %q does not say the crash spec is skipped", b)
	}
}
