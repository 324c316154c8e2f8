package conformance

import (
	"testing"

	"github.com/sandboxkit/sandboxkit/conformance/internal/summary"
)

// The leak check names its report entry and cause in leakcheck.go; the
// summary reads them under its own names. They must be the same words.
func TestLeakCheckSpeaksTheSummarysWords(t *testing.T) {
	if causeEntry != summary.EntryCause || causeLeak != summary.CauseLeak {
		t.Errorf("leakcheck.go's %q and %q differ from the summary's %q and %q",
			causeEntry, causeLeak, summary.EntryCause, summary.CauseLeak)
	}
}
