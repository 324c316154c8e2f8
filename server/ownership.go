package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/sandboxkit/sandboxkit/sandbox"
)

// Metadata keys of ownership. Every sandbox a 2025 session creates carries
// all three, next to [CreateTagKey], as platform metadata set at create
// (a leased sandbox carries [PrincipalTagKey] instead): the
// platform keeps that record, returns it in list results and filters on it,
// so who owns what survives the owner's process. Metadata never reaches a
// tool result (META-4).
const (
	// InstanceTagKey holds the server instance's ID ([Deps.Instance]): the
	// stable name an orchestrator gives a replica. [SweepOrphans] destroys
	// the sandboxes carrying a dead instance's ID.
	InstanceTagKey = "sandboxkit_instance"
	// BootTagKey holds a random value chosen when the [Server] is built: it
	// tells one life of an instance from the next.
	BootTagKey = "sandboxkit_boot"
	// SessionTagKey holds the owning session's log number, as it appears in
	// the server's log lines ("session=N"); with BootTagKey it names the
	// session. It is never the Mcp-Session-Id.
	SessionTagKey = "sandboxkit_session"
)

// instancePattern is what an instance ID may look like: a Kubernetes pod
// name, a host name, a systemd instance. It is written into metadata and
// log lines, so nothing else is accepted.
var instancePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// ValidateInstance checks an instance ID: 1 to 63 letters, digits, '.',
// '_' or '-', starting with a letter or digit.
func ValidateInstance(id string) error {
	if !instancePattern.MatchString(id) {
		return fmt.Errorf("server: instance ID %q: want 1 to 63 letters, digits, '.', '_' or '-', starting with a letter or digit", id)
	}
	return nil
}

// ownership is the server's side of ownership: the owner's names for the
// create metadata and, with an owner lease, the leases it renews. One is
// shared by every copy of the server's Deps.
type ownership struct {
	instance string
	boot     string
	lease    time.Duration // 0: no lease
	logger   *slog.Logger

	mu     sync.Mutex
	leases map[*sandbox.Sandbox]*leaseEntry

	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

// leaseEntry is one owned sandbox under the owner lease: the end its
// session asked for, and the end last set at the platform.
type leaseEntry struct {
	sess        *session
	id          string
	o           *ownedSandbox
	end         time.Time // what the session asked for (create timeout, set_sandbox_timeout, renewals)
	platformEnd time.Time // what the platform was last told: at most the lease ahead
}

// newOwnership returns the ownership of a server, renewing leases in the
// background when lease > 0 until close.
func newOwnership(instance, boot string, lease time.Duration, logger *slog.Logger) *ownership {
	o := &ownership{instance: instance, boot: boot, lease: lease, logger: logger,
		leases: map[*sandbox.Sandbox]*leaseEntry{}, stop: make(chan struct{}), done: make(chan struct{})}
	if lease > 0 {
		go o.renewLoop()
	} else {
		close(o.done)
	}
	return o
}

// close stops the lease renewals and waits for the loop to end.
func (o *ownership) close() {
	if o == nil {
		return
	}
	o.stopOnce.Do(func() { close(o.stop) })
	<-o.done
}

// capped is the lifetime to ask the platform for when the session asks for
// d: d itself without a lease, else at most the lease.
func (o *ownership) capped(d time.Duration) time.Duration {
	if o == nil || o.lease <= 0 || d <= o.lease {
		return d
	}
	return o.lease
}

// createTimeout is the create request's timeout for a requested one (0:
// the platform's default, 300 s).
func (o *ownership) createTimeout(requested time.Duration) time.Duration {
	if o == nil || o.lease <= 0 {
		return requested
	}
	if requested == 0 {
		requested = sandbox.DefaultSandboxTimeout
	}
	return o.capped(requested)
}

// track puts a newly owned sandbox under the lease; requested is the
// lifetime the session asked for at create.
func (o *ownership) track(sess *session, id string, owned *ownedSandbox, requested time.Duration) {
	if o == nil || o.lease <= 0 {
		return
	}
	if requested == 0 {
		requested = sandbox.DefaultSandboxTimeout
	}
	now := time.Now()
	o.mu.Lock()
	o.leases[owned.handle] = &leaseEntry{sess: sess, id: id, o: owned, end: now.Add(requested), platformEnd: now.Add(o.capped(requested))}
	o.mu.Unlock()
}

// setTimeout sets an owned sandbox's lifetime to d: at the platform d, or
// under a lease at most the lease, renewed in the background up to d.
// TIMEOUT-3 and RENEW-1 send {"timeout": N} for N = d; under a lease it is
// min(N, lease) (docs/deploy.md says why).
func (o *ownership) setTimeout(ctx context.Context, h *sandbox.Sandbox, d time.Duration) error {
	sent := o.capped(d)
	if err := h.SetTimeout(ctx, sent); err != nil {
		return err
	}
	if o == nil || o.lease <= 0 {
		return nil
	}
	now := time.Now()
	o.mu.Lock()
	if e, ok := o.leases[h]; ok {
		e.end, e.platformEnd = now.Add(d), now.Add(sent)
	}
	o.mu.Unlock()
	return nil
}

// reported is in with the end the session asked for where the lease cut
// what the platform was told: the platform's end is then at most the lease
// ahead, and the server keeps moving it while it lives, up to that end.
// Where the session asked for no more than the lease, the platform holds
// the session's whole lifetime, and its own end is reported as it is, also
// when it changed behind the server's back (GET-1, GET-5).
func (o *ownership) reported(h *sandbox.Sandbox, in sandbox.Info) sandbox.Info {
	if o == nil || o.lease <= 0 {
		return in
	}
	o.mu.Lock()
	e, ok := o.leases[h]
	capped := ok && e.platformEnd.Before(e.end)
	end := time.Time{}
	if capped {
		end = e.end.UTC()
	}
	o.mu.Unlock()
	if capped && in.EndAt != nil {
		in.EndAt = &end
	}
	return in
}

// renewLoop renews, every third of the lease, each lease that would run out
// within two thirds of it, to the lesser of the lease and what its session
// asked for. A sandbox whose session closed or which is no longer owned is
// forgotten: its close-time destroy is the session's business.
func (o *ownership) renewLoop() {
	defer close(o.done)
	t := time.NewTicker(o.lease / 3)
	defer t.Stop()
	for {
		select {
		case <-o.stop:
			return
		case <-t.C:
		}
		o.renewDue()
	}
}

// renewDue makes one round of lease renewals.
func (o *ownership) renewDue() {
	now := time.Now()
	var due []*leaseEntry
	o.mu.Lock()
	for h, e := range o.leases {
		if _, ok := e.sess.renewalOf(e.id, e.o); !ok || !now.Before(e.end) {
			delete(o.leases, h) // closed, disowned, or at its own end
			continue
		}
		if e.platformEnd.Sub(now) <= o.lease*2/3 && e.platformEnd.Before(e.end) {
			due = append(due, e)
		}
	}
	o.mu.Unlock()
	for _, e := range due {
		remaining := e.end.Sub(now)
		d := o.capped((remaining + time.Second - 1).Truncate(time.Second))
		ctx, cancel := e.sess.bind(context.Background()) // cancelled if the session closes (TIMEOUT-5)
		ctx, cancelT := context.WithTimeout(ctx, o.lease/3)
		err := e.o.handle.SetTimeout(ctx, d)
		cancelT()
		cancel()
		if err != nil {
			o.logger.Warn("owner lease renewal failed", "session", e.sess.seq, "sandbox_id", e.id, "category", string(sandbox.CategoryOf(err)))
			continue
		}
		o.mu.Lock()
		e.platformEnd = now.Add(d)
		o.mu.Unlock()
	}
}

// createMetadata is the metadata of one create: the create tag and, when
// the server has an instance ID, the owner's instance, boot and session.
func (o *ownership) createMetadata(session uint64, createTag string) map[string]string {
	md := map[string]string{CreateTagKey: createTag}
	if o != nil && o.instance != "" {
		md[InstanceTagKey] = o.instance
		md[BootTagKey] = o.boot
		md[SessionTagKey] = strconv.FormatUint(session, 10)
	}
	return md
}

// Instance returns the instance ID the server tags its sandboxes with.
func (s *Server) Instance() string { return s.deps.own.instance }

// SweepOptions tunes [SweepOrphans].
type SweepOptions struct {
	// DryRun lists what would be destroyed and destroys nothing.
	DryRun bool
	// Logger receives one line per sandbox found and destroyed. Nil
	// discards.
	Logger *slog.Logger
	// CallTimeout bounds each list and destroy request. Default
	// [DefaultDestroyTimeout].
	CallTimeout time.Duration
	// RetryFor is how long failed list and destroy requests are retried,
	// with backoff, before the sweep reports them. Zero: no retry.
	RetryFor time.Duration
}

// SweepReport is what [SweepOrphans] found and did. IDs are as tools show
// them (bare for the default provider).
type SweepReport struct {
	Instance    string   `json:"instance"`
	Found       []string `json:"found"`
	Destroyed   []string `json:"destroyed"`
	AlreadyGone []string `json:"already_gone"`
	// Failed maps each sandbox that could not be destroyed to the category
	// of the last failure.
	Failed map[string]sandbox.Category `json:"failed,omitempty"`
	// ListFailed names the provider regions ("provider" or
	// "provider/region") that could not be listed.
	ListFailed map[string]sandbox.Category `json:"list_failed,omitempty"`
	// Duration is how long the sweep took.
	Duration time.Duration `json:"duration"`
}

// errSweepIncomplete is wrapped by SweepOrphans when something could not
// be listed or destroyed.
var errSweepIncomplete = errors.New("orphan sweep incomplete")

// SweepOrphans destroys every sandbox whose metadata names instance as its
// owner ([InstanceTagKey]), at every configured provider with credentials
// and in each of its regions. It selects by the platform's own metadata
// filter (GET /v2/sandboxes?metadata=sandboxkit_instance%3D<id>), so a
// sandbox without the tag is never listed, let alone touched.
//
// The caller asserts that the instance is dead: a server started again with
// the same instance ID calls it before it serves (see [Server.SweepPrevious]),
// and an operator runs "sandboxkit sweep --orphans" for an instance that
// will not come back. It must never run for an instance that is alive.
func SweepOrphans(ctx context.Context, p *sandbox.Platform, instance string, opts *SweepOptions) (*SweepReport, error) {
	if err := ValidateInstance(instance); err != nil {
		return nil, err
	}
	if opts == nil {
		opts = &SweepOptions{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	callTimeout := opts.CallTimeout
	if callTimeout <= 0 {
		callTimeout = DefaultDestroyTimeout
	}
	start := time.Now()
	rep := &SweepReport{Instance: instance, Found: []string{}, Destroyed: []string{}, AlreadyGone: []string{},
		Failed: map[string]sandbox.Category{}, ListFailed: map[string]sandbox.Category{}}
	// The platform filters on metadata itself: GET /v2/sandboxes takes a
	// "metadata" query of k=v pairs that must all match (e2b-dev/infra
	// utils.parseFilters; shared/reference/provider-api.md, "List v2" and
	// "Metadata filter"), and the SDK's List asks for running and paused
	// sandboxes, so a paused orphan is found too.
	filter := map[string]string{InstanceTagKey: instance}
	for _, prov := range p.Providers() {
		if !p.HasCredentials(prov) {
			continue
		}
		pc, _ := p.Provider(prov)
		regions := append([]string{""}, slices.Sorted(maps.Keys(pc.Regions))...)
		for _, region := range regions {
			where := prov
			if region != "" {
				where += "/" + region
			}
			sw := &regionSweep{p: p, prov: prov, region: region, filter: filter, rep: rep, log: log,
				callTimeout: callTimeout, retryFor: opts.RetryFor}
			if err := sw.run(ctx, opts.DryRun); err != nil {
				rep.ListFailed[where] = sandbox.CategoryOf(err)
				log.Error("orphan sweep could not list sandboxes", "instance", instance, "provider", where,
					"category", string(sandbox.CategoryOf(err)))
			}
		}
	}
	slices.Sort(rep.Found)
	slices.Sort(rep.Destroyed)
	slices.Sort(rep.AlreadyGone)
	rep.Duration = time.Since(start)
	if len(rep.Failed) > 0 || len(rep.ListFailed) > 0 {
		return rep, fmt.Errorf("server: %w: %d sandboxes not destroyed, %d provider regions not listed",
			errSweepIncomplete, len(rep.Failed), len(rep.ListFailed))
	}
	return rep, nil
}

// regionSweep sweeps one provider region.
type regionSweep struct {
	p           *sandbox.Platform
	prov        string
	region      string
	filter      map[string]string
	rep         *SweepReport
	log         *slog.Logger
	callTimeout time.Duration
	retryFor    time.Duration
}

// run lists the tagged sandboxes page by page and destroys each one. After
// destroys the first page is listed again, until a listing shows nothing
// that has not been tried already: a sandbox destroyed moves the pages, so
// walking offsets would skip some.
func (r *regionSweep) run(ctx context.Context, dryRun bool) error {
	tried := map[string]bool{}
	offset := 0
	for {
		var page []sandbox.Info
		err := r.withRetry(ctx, func(ctx context.Context) error {
			var err error
			page, err = r.p.List(ctx, &sandbox.ListOptions{Provider: r.prov, Region: r.region, Metadata: r.filter,
				Limit: sandbox.MaxListLimit, Offset: offset})
			return err
		})
		if err != nil {
			return err
		}
		fresh := 0
		for _, in := range page {
			if tried[in.SandboxID] {
				continue
			}
			tried[in.SandboxID] = true
			fresh++
			r.rep.Found = append(r.rep.Found, in.SandboxID)
			if dryRun {
				r.log.Info("orphan sandbox found (dry run: not destroyed)", "instance", r.rep.Instance, "sandbox_id", in.SandboxID)
				continue
			}
			r.destroy(ctx, in.SandboxID)
		}
		switch {
		case len(page) < sandbox.MaxListLimit:
			return nil // the last page
		case dryRun:
			offset += len(page)
		case fresh == 0:
			// A full page of sandboxes already tried (failed destroys):
			// look past them.
			offset += len(page)
		}
	}
}

// destroy kills one orphan by ID, retrying while the failure may pass.
func (r *regionSweep) destroy(ctx context.Context, id string) {
	var gone bool
	err := r.withRetry(ctx, func(ctx context.Context) error {
		err := r.p.KillByID(ctx, id, &sandbox.CallOptions{Region: r.region})
		if err != nil && isNotFound(err) {
			gone = true
			return nil
		}
		return err
	})
	switch {
	case err != nil:
		r.rep.Failed[id] = sandbox.CategoryOf(err)
		r.log.Error("orphan sandbox NOT destroyed: destroy it by hand", "instance", r.rep.Instance, "sandbox_id", id,
			"category", string(sandbox.CategoryOf(err)))
	case gone:
		r.rep.AlreadyGone = append(r.rep.AlreadyGone, id)
		r.log.Info("orphan sandbox already gone", "instance", r.rep.Instance, "sandbox_id", id)
	default:
		r.rep.Destroyed = append(r.rep.Destroyed, id)
		r.log.Info("orphan sandbox destroyed", "instance", r.rep.Instance, "sandbox_id", id)
	}
}

// withRetry runs attempt with its own timeout, retrying with backoff while
// the failure may pass and the retry budget lasts.
func (r *regionSweep) withRetry(ctx context.Context, attempt func(ctx context.Context) error) error {
	deadline := time.Now().Add(r.retryFor)
	delay := retryFirstDelay
	for {
		actx, cancel := context.WithTimeout(ctx, r.callTimeout)
		err := attempt(actx)
		cancel()
		if err == nil || !retryable(sandbox.CategoryOf(err)) || time.Now().Add(delay).After(deadline) {
			return err
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return err
		}
		delay = min(delay*2, retryMaxDelay)
	}
}

// SweepPrevious destroys what an earlier life of this server's instance
// left: every sandbox tagged with its instance ID (SESSION-4). Call it once, before the
// server serves anything (a sandbox this life creates carries the same
// instance ID). It uses the destroy limits of [Deps.Limits].
func (s *Server) SweepPrevious(ctx context.Context) (*SweepReport, error) {
	l := s.deps.Limits
	return SweepOrphans(ctx, s.deps.Platform, s.deps.own.instance, &SweepOptions{
		Logger: s.deps.Logger, CallTimeout: l.DestroyTimeout, RetryFor: max(l.DestroyRetryFor, 0)})
}
