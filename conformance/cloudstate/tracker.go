package cloudstate

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Tracker keeps one run's state file up to date: every change is written
// at once, atomically. It is safe for concurrent use.
type Tracker struct {
	mu   sync.Mutex
	path string
	rec  RunRecord
	err  error // the last write failure
}

// NewTracker creates the state file of a new run, rec.RunID, in dir and
// writes rec to it; it fails when the run already has one.
func NewTracker(dir string, rec RunRecord) (*Tracker, error) {
	if !ValidRunID(rec.RunID) {
		return nil, fmt.Errorf("cloudstate: run ID %q: want letters, digits, '.', '_' or '-' (at most 64)", rec.RunID)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("cloudstate: state directory: %w", err)
	}
	t := &Tracker{path: filepath.Join(dir, rec.RunID+".json"), rec: rec}
	if t.rec.Sandboxes == nil {
		t.rec.Sandboxes = []TrackedSandbox{}
	}
	f, err := os.OpenFile(t.path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("cloudstate: run %s already has a state file (%s): choose another run ID", rec.RunID, t.path)
		}
		return nil, fmt.Errorf("cloudstate: state file: %w", err)
	}
	_ = f.Close()
	if err := t.saveLocked(); err != nil {
		return nil, err
	}
	return t, nil
}

// RunID is the ID of the tracked run.
func (t *Tracker) RunID() string { return t.rec.RunID }

// WriteErr returns the last failure to write the state file, if any.
func (t *Tracker) WriteErr() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

// saveLocked writes the record atomically (temporary file, then rename).
func (t *Tracker) saveLocked() error {
	data, err := json.MarshalIndent(t.rec, "", "  ")
	if err != nil {
		return fmt.Errorf("cloudstate: state file: %w", err)
	}
	tmp := t.path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o600); err != nil {
		t.err = err
		return fmt.Errorf("cloudstate: state file: %w", err)
	}
	if err := os.Rename(tmp, t.path); err != nil {
		t.err = err
		return fmt.Errorf("cloudstate: state file: %w", err)
	}
	return nil
}

// Track records a new sandbox; it reports false when the ID was known.
func (t *Tracker) Track(id, source, spec string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range t.rec.Sandboxes {
		if s.ID == id {
			return false
		}
	}
	t.rec.Sandboxes = append(t.rec.Sandboxes, TrackedSandbox{ID: id, Source: source, Spec: spec, SeenAt: time.Now().UTC(), State: SandboxAlive})
	_ = t.saveLocked()
	return true
}

// Has reports whether the run tracks the sandbox id.
func (t *Tracker) Has(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range t.rec.Sandboxes {
		if s.ID == id {
			return true
		}
	}
	return false
}

// State returns a tracked sandbox's state ("" when untracked).
func (t *Tracker) State(id string) string {
	return t.lookup(id, func(s *TrackedSandbox) string { return s.State })
}

// Source returns how a tracked sandbox was created ("" when untracked).
func (t *Tracker) Source(id string) string {
	return t.lookup(id, func(s *TrackedSandbox) string { return s.Source })
}

// lookup returns field of the tracked sandbox id ("" when untracked).
func (t *Tracker) lookup(id string, field func(*TrackedSandbox) string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range t.rec.Sandboxes {
		if t.rec.Sandboxes[i].ID == id {
			return field(&t.rec.Sandboxes[i])
		}
	}
	return ""
}

// StartedAt is when the run began, by the kit's clock.
func (t *Tracker) StartedAt() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.rec.StartedAt
}

// IsAlive reports whether a tracked sandbox is not known to be gone.
func (t *Tracker) IsAlive(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range t.rec.Sandboxes {
		if s.ID == id {
			return s.State == SandboxAlive
		}
	}
	return false
}

// SetState moves an alive sandbox to state; it reports whether it changed.
func (t *Tracker) SetState(id, state string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, s := range t.rec.Sandboxes {
		if s.ID == id && s.State == SandboxAlive {
			t.rec.Sandboxes[i].State = state
			_ = t.saveLocked()
			return true
		}
	}
	return false
}

// Alive returns the IDs not known to be gone, oldest first.
func (t *Tracker) Alive() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var ids []string
	for _, s := range t.rec.Sandboxes {
		if s.State == SandboxAlive {
			ids = append(ids, s.ID)
		}
	}
	return ids
}

// Record returns a copy of the record.
func (t *Tracker) Record() RunRecord {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.rec
	r.Sandboxes = append([]TrackedSandbox(nil), t.rec.Sandboxes...)
	return r
}

// End marks the run finished.
func (t *Tracker) End() {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now().UTC()
	t.rec.EndedAt = &now
	_ = t.saveLocked()
}
