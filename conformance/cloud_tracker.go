package conformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sandboxkit/sandboxkit/sandbox"
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

const runRecordFormat = 1

var runIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

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

// tracker keeps one run's state file up to date.
type tracker struct {
	mu   sync.Mutex
	path string
	rec  RunRecord
	err  error // the last write failure
}

func newTracker(dir string, rec RunRecord) (*tracker, error) {
	if !runIDPattern.MatchString(rec.RunID) {
		return nil, fmt.Errorf("conformance: run ID %q: want letters, digits, '.', '_' or '-' (at most 64)", rec.RunID)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("conformance: state directory: %w", err)
	}
	t := &tracker{path: filepath.Join(dir, rec.RunID+".json"), rec: rec}
	if t.rec.Sandboxes == nil {
		t.rec.Sandboxes = []TrackedSandbox{}
	}
	f, err := os.OpenFile(t.path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("conformance: run %s already has a state file (%s): choose another run ID", rec.RunID, t.path)
		}
		return nil, fmt.Errorf("conformance: state file: %w", err)
	}
	_ = f.Close()
	if err := t.saveLocked(); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *tracker) runID() string { return t.rec.RunID }

// writeErr returns the last failure to write the state file, if any.
func (t *tracker) writeErr() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

// saveLocked writes the record atomically (temporary file, then rename).
func (t *tracker) saveLocked() error {
	data, err := json.MarshalIndent(t.rec, "", "  ")
	if err != nil {
		return err
	}
	tmp := t.path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o600); err != nil {
		t.err = err
		return fmt.Errorf("conformance: state file: %w", err)
	}
	if err := os.Rename(tmp, t.path); err != nil {
		t.err = err
		return fmt.Errorf("conformance: state file: %w", err)
	}
	return nil
}

// track records a new sandbox; it reports false when the ID was known.
func (t *tracker) track(id, source, spec string) bool {
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

func (t *tracker) has(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range t.rec.Sandboxes {
		if s.ID == id {
			return true
		}
	}
	return false
}

// state returns a tracked sandbox's state ("" when untracked).
func (t *tracker) state(id string) string {
	return t.lookup(id, func(s *TrackedSandbox) string { return s.State })
}

// source returns how a tracked sandbox was created ("" when untracked).
func (t *tracker) source(id string) string {
	return t.lookup(id, func(s *TrackedSandbox) string { return s.Source })
}

// lookup returns field of the tracked sandbox id ("" when untracked).
func (t *tracker) lookup(id string, field func(*TrackedSandbox) string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range t.rec.Sandboxes {
		if t.rec.Sandboxes[i].ID == id {
			return field(&t.rec.Sandboxes[i])
		}
	}
	return ""
}

// startedAt is when the run began, by the kit's clock.
func (t *tracker) startedAt() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.rec.StartedAt
}

// isAlive reports whether a tracked sandbox is not known to be gone.
func (t *tracker) isAlive(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range t.rec.Sandboxes {
		if s.ID == id {
			return s.State == SandboxAlive
		}
	}
	return false
}

// setState moves an alive sandbox to state; it reports whether it changed.
func (t *tracker) setState(id, state string) bool {
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

// alive returns the IDs not known to be gone, oldest first.
func (t *tracker) alive() []string {
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

// record returns a copy of the record.
func (t *tracker) record() RunRecord {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.rec
	r.Sandboxes = append([]TrackedSandbox(nil), t.rec.Sandboxes...)
	return r
}

// end marks the run finished.
func (t *tracker) end() {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now().UTC()
	t.rec.EndedAt = &now
	_ = t.saveLocked()
}

// ReadRun reads a run's state file.
func ReadRun(stateDir, runID string) (*RunRecord, error) {
	if !runIDPattern.MatchString(runID) {
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

// SweepOptions select the run to sweep.
type SweepOptions struct {
	// RunID is the run whose leftovers to destroy; required.
	RunID string
	// StateDir holds the run's state file; "" means [DefaultStateDir].
	StateDir string
	// Getenv reads the provider credentials; nil means os.Getenv.
	Getenv func(string) string
	// HTTPClient carries the platform requests; nil means a default client.
	HTTPClient *http.Client
	// Force sweeps a run whose process still seems to be running.
	Force bool
}

// SweepResult says what a sweep did.
type SweepResult struct {
	RunID string
	// Destroyed were alive and are destroyed now; AlreadyGone did not exist
	// any more; Failed could not be destroyed (ID → error category).
	Destroyed   []string
	AlreadyGone []string
	Failed      map[string]string
	// NotCreated were reported by the server under test as created, but
	// the platform says they started before the run: left alone.
	NotCreated []string
}

// ErrRunInProgress is returned by [Sweep] for a run whose process is
// still alive on this host.
var ErrRunInProgress = errors.New("the run is still in progress")

// Sweep destroys the sandboxes an interrupted cloud run created and left
// alive: exactly the IDs of its state file, each with KillByID. It never
// lists the account and never touches any other sandbox. A sandbox the
// server under test reported as created is read first (GetInfoByID) and
// left alone when the platform says it started before the run. A sandbox
// already gone counts as done. The state file is updated as it goes, so a
// sweep can be repeated.
func Sweep(ctx context.Context, opts *SweepOptions) (*SweepResult, error) {
	if opts == nil || opts.RunID == "" {
		return nil, errors.New("sweep: a run ID is required (sweeping is per run)")
	}
	dir := opts.StateDir
	if dir == "" {
		dir = DefaultStateDir()
	}
	rec, err := ReadRun(dir, opts.RunID)
	if err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	if !opts.Force && rec.EndedAt == nil && processAlive(rec.Host, rec.PID) {
		return nil, fmt.Errorf("sweep: run %s (pid %d on %s): %w; wait for it, or force", rec.RunID, rec.PID, rec.Host, ErrRunInProgress)
	}
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	p, err := sandbox.NewPlatform(&sandbox.Options{Getenv: getenv, HTTPClient: opts.HTTPClient, UserAgent: "sandboxkit-sweep/" + Version})
	if err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	if rec.ProviderID != sandbox.DefaultProviderID {
		return nil, fmt.Errorf("sweep: run %s used provider %q, which sweep cannot reach", rec.RunID, rec.ProviderID)
	}
	pc, _ := p.Provider(sandbox.DefaultProviderID)
	if host := apiHost(pc.APIURL); host != rec.APIHost {
		return nil, fmt.Errorf("sweep: run %s created its sandboxes at %s, but the environment points at %s: refusing", rec.RunID, rec.APIHost, host)
	}
	if !p.HasCredentials(sandbox.DefaultProviderID) {
		return nil, fmt.Errorf("sweep: %s is not set: the provider's credentials are needed", sandbox.EnvAPIKey)
	}
	t := &tracker{path: filepath.Join(dir, rec.RunID+".json"), rec: *rec}
	res := &SweepResult{RunID: rec.RunID, Failed: map[string]string{}}
	for _, id := range t.alive() {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		var err error
		notCreated := false
		if t.source(id) != SourceKit {
			var in *sandbox.Info
			in, err = p.GetInfoByID(cctx, id, nil)
			notCreated = err == nil && startedBeforeRun(in, rec.StartedAt)
		}
		if err == nil && !notCreated {
			err = p.KillByID(cctx, id, nil)
		}
		cancel()
		switch {
		case notCreated:
			t.setState(id, SandboxNotCreated)
			res.NotCreated = append(res.NotCreated, id)
		case err == nil:
			t.setState(id, SandboxDestroyed)
			res.Destroyed = append(res.Destroyed, id)
		case sandbox.CategoryOf(err) == sandbox.NotFound:
			t.setState(id, SandboxGone)
			res.AlreadyGone = append(res.AlreadyGone, id)
		default:
			res.Failed[id] = string(sandbox.CategoryOf(err))
		}
		if ctx.Err() != nil {
			break
		}
	}
	if t.err != nil {
		return res, fmt.Errorf("sweep: updating the state file: %w", t.err)
	}
	if len(res.Failed) > 0 {
		return res, fmt.Errorf("sweep: %d sandbox(es) could not be destroyed; sweep again later", len(res.Failed))
	}
	return res, nil
}

// processAlive reports whether pid runs on this host (other hosts: assume
// it may).
func processAlive(host string, pid int) bool {
	if pid <= 0 {
		return false
	}
	if h, _ := os.Hostname(); h != host {
		return true
	}
	proc, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = proc.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}
