package cloudstate

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// RunRecord is the state file of a cloud run: every sandbox the run
// created, written as soon as each ID is seen, so that `sandboxkit sweep`
// can destroy what an interrupted run left behind. It lives at
// <state dir>/<run ID>.json.
type RunRecord struct {
	Format     int    `json:"format"`
	RunID      string `json:"run_id"`
	KitVersion string `json:"kit_version"`
	// ProviderID and APIHost say where the sandboxes live; sweeping refuses
	// an environment that points elsewhere.
	ProviderID string `json:"provider_id"`
	APIHost    string `json:"api_host"`
	// Host and PID identify the process of the run, so that a sweep does
	// not pull sandboxes from under a run still in progress.
	Host      string     `json:"host"`
	PID       int        `json:"pid"`
	StartedAt time.Time  `json:"started_at"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
	// Sandboxes are the sandboxes the run created, in the order seen.
	Sandboxes []TrackedSandbox `json:"sandboxes"`
}

// TrackedSandbox is one sandbox a run created.
type TrackedSandbox struct {
	ID string `json:"sandbox_id"`
	// Source says how it was created: create_sandbox (a tool result),
	// implicit (a data-plane tool without sandbox_id), or kit (the kit's
	// own SDK, as an external sandbox for a spec).
	Source string `json:"source"`
	// Spec is the spec that created it.
	Spec   string    `json:"spec,omitempty"`
	SeenAt time.Time `json:"seen_at"`
	// State is alive (may still exist), gone (the provider said it does not
	// exist), destroyed (the kit destroyed it) or not-created (the server
	// reported it as created, but the provider says it started before the
	// run: never destroyed).
	State string `json:"state"`
}

// Sources and states of tracked sandboxes.
const (
	SourceCreate   = "create_sandbox"
	SourceImplicit = "implicit"
	SourceKit      = "kit"

	SandboxAlive     = "alive"
	SandboxGone      = "gone"
	SandboxDestroyed = "destroyed"
	// SandboxNotCreated is a sandbox the server reported as created by its
	// session that the platform says started before the run began: the
	// run did not create it, so the kit never destroys it.
	SandboxNotCreated = "not-created"
)

// RecordFormat is the format of the state files this package writes.
const RecordFormat = 1

var runIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ValidRunID reports whether id can name a run (and its state file):
// letters, digits, '.', '_' or '-', at most 64, not starting with a
// punctuation mark.
func ValidRunID(id string) bool { return runIDPattern.MatchString(id) }

// NewRunID returns a fresh run ID: the UTC time and a random suffix.
func NewRunID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b)
}

// DefaultStateDir is where cloud runs keep their state files:
// $XDG_STATE_HOME/sandboxkit/runs, else ~/.local/state/sandboxkit/runs.
func DefaultStateDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "sandboxkit", "runs")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "sandboxkit", "runs")
	}
	return filepath.Join(os.TempDir(), "sandboxkit", "runs")
}

// ReadRun reads a run's state file.
func ReadRun(stateDir, runID string) (*RunRecord, error) {
	if !ValidRunID(runID) {
		return nil, fmt.Errorf("run ID %q is not a valid run ID", runID)
	}
	if stateDir == "" {
		stateDir = DefaultStateDir()
	}
	data, err := os.ReadFile(filepath.Join(stateDir, runID+".json"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no state file for run %s in %s", runID, stateDir)
		}
		return nil, err
	}
	var rec RunRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("state file of run %s: %w", runID, err)
	}
	if rec.RunID != runID {
		return nil, fmt.Errorf("state file of run %s names run %q", runID, rec.RunID)
	}
	return &rec, nil
}

// ListRuns reads every run's state file in stateDir ("" for the default),
// newest first.
func ListRuns(stateDir string) ([]RunRecord, error) {
	if stateDir == "" {
		stateDir = DefaultStateDir()
	}
	entries, err := os.ReadDir(stateDir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var out []RunRecord
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || e.IsDir() {
			continue
		}
		rec, err := ReadRun(stateDir, id)
		if err != nil {
			continue
		}
		out = append(out, *rec)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].StartedAt.After(out[j].StartedAt) })
	return out, nil
}

// Alive counts the sandboxes of the record not known to be gone.
func (r *RunRecord) Alive() int {
	n := 0
	for _, s := range r.Sandboxes {
		if s.State == SandboxAlive {
			n++
		}
	}
	return n
}
