package server

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/sandboxkit/sandboxkit/sandbox"
)

// CreateTagKey is the metadata key the server puts on every sandbox it
// creates, with a random value per create request. When a create fails
// without a definite answer (no response, a 5xx, an unreadable success),
// the provider may have created the sandbox anyway; the server then lists
// the sandboxes carrying that value and destroys them, so that a lost
// answer never leaves a billed sandbox behind.
const CreateTagKey = "sandboxkit_create"

// Backoff of retried destroys and create checks: doubling from the first
// delay up to the last, with up to 25 % jitter.
const (
	retryFirstDelay = 200 * time.Millisecond
	retryMaxDelay   = 10 * time.Second
)

// Unresolved is a sandbox the server was responsible for and could not
// destroy: the provider kept failing until [Limits.DestroyRetryFor] ran
// out, refused the destroy outright (unauthenticated, permission denied),
// or the server shut down first. It may still be running, and billed: an
// operator must destroy it by hand. Each one is also logged at error
// level when it is given up on.
type Unresolved struct {
	// SandboxID is the sandbox's ID as tools return it; empty when the
	// server does not know it (see CreateTag).
	SandboxID string `json:"sandbox_id,omitempty"`
	// CreateTag is set for a create request whose outcome stayed unknown:
	// a sandbox may exist whose metadata holds [CreateTagKey] with this
	// value.
	CreateTag string `json:"create_tag,omitempty"`
	// Session is the log number of the session that owned it.
	Session uint64 `json:"session"`
	// Category is the category of the last failure.
	Category sandbox.Category `json:"category"`
	// Attempts is how many requests were made.
	Attempts int `json:"attempts"`
}

// maxUnresolved bounds the list [Server.Unresolved] returns: a provider
// that stays down must not grow it without end. Every entry is also logged
// when it is given up on.
const maxUnresolved = 1000

// cleanupJob is one close-time destroy, or one check for a sandbox that a
// failed create may have left.
type cleanupJob struct {
	session uint64
	id      string                          // canonical sandbox ID; "" for a create check
	tag     string                          // create tag, for a create check
	kill    func(ctx context.Context) error // destroys the sandbox
	// find lists the sandboxes a failed create may have left (create checks).
	find func(ctx context.Context) ([]string, error)
	// lifetime is the timeout a create check's create asked for: how long
	// a sandbox it left can live once it exists.
	lifetime time.Duration
}

// cleanupState is the state of close-time destroys and create checks: the
// ones in flight, for the shutdown report, and the ones given up on.
type cleanupState struct {
	mu         sync.Mutex
	inFlight   map[*cleanupJob]struct{}
	unresolved []Unresolved  // the newest maxUnresolved
	dropped    int           // older ones no longer listed
	abandoned  chan struct{} // closed when shutdown gives up waiting
	abandonOne sync.Once
	stopping   chan struct{} // closed when shutdown begins: create checks look one last time
	stopOne    sync.Once
}

func newCleanupState() *cleanupState {
	return &cleanupState{inFlight: map[*cleanupJob]struct{}{}, abandoned: make(chan struct{}), stopping: make(chan struct{})}
}

// retryable reports whether a failed destroy or list may succeed later.
// A refusal of the credentials or of the request itself will not: it is
// tried once (SESSION-5).
func retryable(c sandbox.Category) bool {
	switch c {
	case sandbox.InvalidArgument, sandbox.Unauthenticated, sandbox.PermissionDenied:
		return false
	}
	return true
}

// startCleanup runs a destroy or create check in the background, tracked by
// cleanups (and a destroy by destroys too: a create check may look for
// minutes, and one connection's end must not wait for another's check).
func (r *registry) startCleanup(job *cleanupJob) {
	r.cleanups.add()
	if job.find == nil {
		r.destroys.add()
	}
	go func() {
		defer r.cleanups.done()
		if job.find == nil {
			defer r.destroys.done()
		}
		r.runJob(job)
	}()
}

// runJob runs a destroy or create check to its end: done, given up on
// (and reported), or abandoned at shutdown (and reported).
func (r *registry) runJob(job *cleanupJob) {
	st := r.state
	st.mu.Lock()
	st.inFlight[job] = struct{}{}
	st.mu.Unlock()
	defer func() {
		st.mu.Lock()
		delete(st.inFlight, job)
		st.mu.Unlock()
	}()
	if job.find != nil {
		r.checkCreate(job)
		return
	}
	r.destroy(job)
}

// destroy kills one sandbox, retrying with backoff while the failure may
// pass, for at most Limits.DestroyRetryFor. A sandbox already gone is fine.
func (r *registry) destroy(job *cleanupJob) {
	start := time.Now()
	r.retry(job, "destroy", func(ctx context.Context) error {
		err := job.kill(ctx)
		if err != nil && isNotFound(err) {
			r.deps.Logger.Info("owned sandbox already gone", "session", job.session, "sandbox_id", job.id)
			return nil
		}
		if err == nil {
			r.deps.Logger.Info("owned sandbox destroyed", "session", job.session, "sandbox_id", job.id, "duration", time.Since(start))
		}
		return err
	})
}

// checkCreate looks for the sandboxes tagged by a create whose answer was
// lost, and destroys each one found (LOST-1). The platform may act on the create
// after the server gave up on it, so an empty listing is not the end: it
// lists again with backoff for Limits.CreateCheckFor, or until shutdown
// begins (one last listing then).
func (r *registry) checkCreate(job *cleanupJob) {
	start := time.Now()
	deadline := start.Add(r.deps.Limits.CreateCheckFor)
	delay := retryFirstDelay
	for n := 1; ; n++ {
		var found []string
		if !r.retry(job, "create check", func(ctx context.Context) error {
			ids, err := job.find(ctx)
			found = ids
			return err
		}) {
			return
		}
		if len(found) > 0 {
			r.destroyFound(job, found, time.Since(start))
			return
		}
		if time.Now().Add(delay).After(deadline) || r.waitOrStop(delay) {
			r.noneFound(job, n, time.Since(start))
			return
		}
		delay = min(delay*2, retryMaxDelay)
	}
}

// waitOrStop waits d and reports whether shutdown began first.
func (r *registry) waitOrStop(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return false
	case <-r.state.stopping:
		return true
	}
}

// stopping reports whether shutdown began.
func (r *registry) stopping() bool {
	select {
	case <-r.state.stopping:
		return true
	default:
		return false
	}
}

// noneFound ends a create check that found nothing. Before shutdown that
// took the whole window; a sandbox the platform makes later still ends by
// its lifetime, and the log says so rather than that none was left.
func (r *registry) noneFound(job *cleanupJob, listings int, took time.Duration) {
	lifetime := job.lifetime
	if lifetime <= 0 {
		lifetime = sandbox.DefaultSandboxTimeout
	}
	if r.stopping() {
		// Cut short: the outcome stays unknown, and is reported.
		r.giveUp(job, sandbox.Unavailable, listings)
		return
	}
	r.deps.Logger.Info("lost create: no sandbox appeared within the check window; one the platform makes later ends by its lifetime",
		"session", job.session, "metadata", CreateTagKey+"="+job.tag, "listings", listings,
		"window", took.Round(time.Millisecond).String(), "lifetime", lifetime.String())
}

// destroyFound destroys, in the background, the sandboxes a create check
// found.
func (r *registry) destroyFound(job *cleanupJob, found []string, after time.Duration) {
	for _, id := range found {
		r.deps.Logger.Warn("lost create left a sandbox; destroying it", "session", job.session, "sandbox_id", id,
			"found_after", after.Round(time.Millisecond))
		r.startCleanup(&cleanupJob{session: job.session, id: id, kill: func(ctx context.Context) error {
			return r.deps.Platform.KillByID(ctx, id, nil)
		}})
	}
}

// retry runs attempt until it succeeds, fails for good, the retry budget
// runs out or shutdown abandons cleanups; it reports the job as unresolved
// in the last three cases and returns whether attempt succeeded.
func (r *registry) retry(job *cleanupJob, what string, attempt func(ctx context.Context) error) bool {
	deadline := time.Now().Add(max(r.deps.Limits.DestroyRetryFor, 0))
	delay := retryFirstDelay
	n, cat := 0, sandbox.Category("")
	for {
		if n > 0 {
			// A failed attempt: wait, unless the budget is spent.
			wait := delay + rand.N(delay/4+1)
			delay = min(delay*2, retryMaxDelay)
			if !retryable(cat) || time.Now().Add(wait).After(deadline) {
				r.giveUp(job, cat, n)
				return false
			}
			r.deps.Logger.Warn("sandbox "+what+" failed; retrying", "session", job.session, "attempt", n,
				"category", string(cat), "retry_in", wait.Round(time.Millisecond))
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-r.state.abandoned:
				t.Stop()
				r.giveUp(job, cat, n)
				return false
			}
		}
		n++
		err := r.attemptOnce(attempt)
		if err == nil {
			return true
		}
		cat = sandbox.CategoryOf(err)
	}
}

// attemptOnce makes one attempt with its own timeout, at most
// Limits.DestroyConcurrency at a time across the server.
func (r *registry) attemptOnce(attempt func(ctx context.Context) error) error {
	r.sem <- struct{}{}
	defer func() { <-r.sem }()
	ctx, cancel := context.WithTimeout(context.Background(), r.deps.Limits.DestroyTimeout)
	defer cancel()
	return attempt(ctx)
}

// giveUp records and logs a job that could not be completed. The log line
// holds the sandbox ID (or the create tag), the category and the attempt
// count: never a provider message, a URL or a credential.
func (r *registry) giveUp(job *cleanupJob, cat sandbox.Category, attempts int) {
	u := Unresolved{SandboxID: job.id, CreateTag: job.tag, Session: job.session, Category: cat, Attempts: attempts}
	r.state.mu.Lock()
	if len(r.state.unresolved) >= maxUnresolved {
		// Keep the newest; each was logged when it was given up on.
		r.state.unresolved = append(r.state.unresolved[:0], r.state.unresolved[1:]...)
		r.state.dropped++
	}
	r.state.unresolved = append(r.state.unresolved, u)
	r.state.mu.Unlock()
	if job.id != "" {
		// SESSION-5: the ID alone names what the operator must destroy.
		r.deps.Logger.Error("sandbox NOT destroyed: destroy it by hand", "session", job.session, "sandbox_id", job.id,
			"category", string(cat), "attempts", attempts)
		return
	}
	r.deps.Logger.Error("create outcome unknown: a sandbox may be left; look for its metadata tag and destroy it by hand",
		"session", job.session, "metadata", CreateTagKey+"="+job.tag, "category", string(cat), "attempts", attempts)
}

// abandon makes every job stop retrying and report itself unresolved;
// shutdown calls it when its deadline passes.
func (r *registry) abandon() {
	r.stopChecks()
	r.state.abandonOne.Do(func() { close(r.state.abandoned) })
}

// stopChecks makes every create check list one last time and end; shutdown
// calls it as it begins.
func (r *registry) stopChecks() {
	r.state.stopOne.Do(func() { close(r.state.stopping) })
}

// pendingCleanups lists the jobs still in flight, for the shutdown report.
func (r *registry) pendingCleanups() []string {
	r.state.mu.Lock()
	defer r.state.mu.Unlock()
	out := make([]string, 0, len(r.state.inFlight))
	for j := range r.state.inFlight {
		if j.id != "" {
			out = append(out, j.id)
		} else {
			out = append(out, CreateTagKey+"="+j.tag)
		}
	}
	slices.Sort(out)
	return out
}

// Unresolved returns the sandboxes the server gave up destroying so far,
// oldest first: at most the newest 1000 (each one was also logged when it
// was given up on; see [Server.UnresolvedCount] for the total). An empty result after [Server.Shutdown] returned nil means
// every sandbox the server created has been destroyed.
func (s *Server) Unresolved() []Unresolved {
	s.reg.state.mu.Lock()
	defer s.reg.state.mu.Unlock()
	return slices.Clone(s.reg.state.unresolved)
}

// ambiguousCreate reports whether a failed create may nevertheless have
// created a sandbox: no answer arrived, or a server-side failure, or an
// unreadable success. A 4xx, or a check that failed before any request, is
// a definite no.
func ambiguousCreate(err error) bool {
	var se *sandbox.Error
	if !errors.As(err, &se) {
		return true
	}
	switch {
	case se.HTTPStatus >= 500, se.HTTPStatus >= 200 && se.HTTPStatus < 300:
		return true
	case se.HTTPStatus == 0:
		// A connection that was never made carried no create.
		if se.Code == sandbox.CodeNotSent {
			return false
		}
		return se.Category == sandbox.Timeout || se.Category == sandbox.Unavailable
	}
	return false
}

// createTagValue returns a fresh random create tag.
func createTagValue() string { return randomHex(12) }

// UnresolvedCount returns how many sandboxes the server gave up destroying
// so far, including those no longer listed by [Server.Unresolved].
func (s *Server) UnresolvedCount() int {
	s.reg.state.mu.Lock()
	defer s.reg.state.mu.Unlock()
	return len(s.reg.state.unresolved) + s.reg.state.dropped
}
