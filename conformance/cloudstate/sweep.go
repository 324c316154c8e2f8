package cloudstate

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/sandboxkit/sandboxkit/sandbox"
)

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
	// UserAgent names the sweep to the provider; "" means "sandboxkit-sweep".
	UserAgent string
}

func (o *SweepOptions) userAgent() string {
	if o.UserAgent != "" {
		return o.UserAgent
	}
	return "sandboxkit-sweep"
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
	p, err := sweepPlatform(opts, rec)
	if err != nil {
		return nil, err
	}
	t := &Tracker{path: filepath.Join(dir, rec.RunID+".json"), rec: *rec}
	res := &SweepResult{RunID: rec.RunID, Failed: map[string]string{}}
	for _, id := range t.Alive() {
		res.add(t, id, sweepOne(ctx, p, t, id, rec.StartedAt))
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

// sweepPlatform builds the SDK a sweep of rec uses, and refuses an
// environment that does not reach the provider and API host of the run,
// or has no credentials.
func sweepPlatform(opts *SweepOptions, rec *RunRecord) (*sandbox.Platform, error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	p, err := sandbox.NewPlatform(&sandbox.Options{Getenv: getenv, HTTPClient: opts.HTTPClient, UserAgent: opts.userAgent()})
	if err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	if rec.ProviderID != sandbox.DefaultProviderID {
		return nil, fmt.Errorf("sweep: run %s used provider %q, which sweep cannot reach", rec.RunID, rec.ProviderID)
	}
	pc, _ := p.Provider(sandbox.DefaultProviderID)
	if host := APIHost(pc.APIURL); host != rec.APIHost {
		return nil, fmt.Errorf("sweep: run %s created its sandboxes at %s, but the environment points at %s: refusing", rec.RunID, rec.APIHost, host)
	}
	if !p.HasCredentials(sandbox.DefaultProviderID) {
		return nil, fmt.Errorf("sweep: %s is not set: the provider's credentials are needed", sandbox.EnvAPIKey)
	}
	return p, nil
}

// errSweptNotCreated marks a sandbox sweepOne left alone: the platform
// says it started before the run.
var errSweptNotCreated = errors.New("started before the run")

// sweepOne destroys one tracked sandbox by ID. One the server reported as
// created is read first, and left alone (errSweptNotCreated) when it
// started before the run.
func sweepOne(ctx context.Context, p *sandbox.Platform, t *Tracker, id string, runStart time.Time) error {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if t.Source(id) != SourceKit {
		in, err := p.GetInfoByID(cctx, id, nil)
		if err != nil {
			return err
		}
		if StartedBeforeRun(in, runStart) {
			return errSweptNotCreated
		}
	}
	return p.KillByID(cctx, id, nil)
}

// add records what sweeping id did, in res and in the state file.
func (res *SweepResult) add(t *Tracker, id string, err error) {
	switch {
	case errors.Is(err, errSweptNotCreated):
		t.SetState(id, SandboxNotCreated)
		res.NotCreated = append(res.NotCreated, id)
	case err == nil:
		t.SetState(id, SandboxDestroyed)
		res.Destroyed = append(res.Destroyed, id)
	case sandbox.CategoryOf(err) == sandbox.NotFound:
		t.SetState(id, SandboxGone)
		res.AlreadyGone = append(res.AlreadyGone, id)
	default:
		res.Failed[id] = string(sandbox.CategoryOf(err))
	}
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

// ClockSkew is how far the provider's clock may stray from the kit's
// before a sandbox's start time counts as before the run.
const ClockSkew = 60 * time.Second

// StartedBeforeRun reports whether the platform says a sandbox started
// before the run began (by more than [ClockSkew]): whatever a server
// claims, the run cannot have created it.
func StartedBeforeRun(in *sandbox.Info, runStart time.Time) bool {
	return in != nil && in.StartedAt != nil && in.StartedAt.Before(runStart.Add(-ClockSkew))
}

// APIHost returns the host (and port) of an API URL, as a state file
// records it.
func APIHost(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Host
}
