package server

import (
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/sandboxkit/sandboxkit/sandbox"
)

// Deps is what the tools need from the outside world. Build one, then pass it
// to [New] (or to a tool constructor in tests). Only Platform is required.
type Deps struct {
	// Platform reaches the configured providers.
	Platform *sandbox.Platform
	// Logger receives structured logs: method, tool, duration and category,
	// never arguments, results, provider messages, URLs or tokens. Nil
	// discards logs.
	Logger *slog.Logger
	// Limits bounds outputs, transfers and cleanup. Zero fields take the
	// documented defaults.
	Limits Limits
	// Now tells the time (durations in logs, background command bookkeeping).
	// Nil means time.Now.
	Now func() time.Time
	// Secrets are values that must never appear in any tool result: the
	// providers' API keys, the HTTP bearer token. The last-line middleware
	// replaces each one found in a result. See [SecretsFromEnv].
	Secrets []string
	// Instance names this server instance in the metadata of every sandbox
	// it creates ([InstanceTagKey]): the stable name an orchestrator gives
	// a replica, so that the replica started again under the same name can
	// destroy what its previous life owned ([Server.SweepPrevious]). Empty:
	// [New] picks a random one. See [ValidateInstance].
	Instance string
	// OwnerLease, when positive, bounds how long an owned sandbox outlives
	// a server that dies without its close-time destroys (kill -9, a lost
	// node): the platform is never told a lifetime longer than the lease,
	// and the server renews it every third of the lease, up to what the
	// session asked for. Tool results keep reporting the session's end.
	// Zero: no lease (the platform is told what the session asks). At
	// least [MinOwnerLease]; see docs/deploy.md for what it costs.
	OwnerLease time.Duration
	// OwnSandboxesOnly confines every caller to its own sandboxes
	// (HANDLE-6): a sandbox_id that this deployment did not create for
	// the caller's principal (an external ID, a sandbox another 2025
	// session owns) is not_found, as an unknown one is, and
	// list_sandboxes lists only the principal's leased sandboxes. False
	// (the default): external IDs stay allowed (section 4, RENEW-2).
	OwnSandboxesOnly bool

	own    *ownership // set by New: instance, this life's boot tag, leases
	leases *leaseBook // set by New: lease records and commands of modern requests
}

// MinOwnerLease is the shortest [Deps.OwnerLease].
const MinOwnerLease = 3 * time.Second

// Limits bounds what one call may produce or move. The zero value of each
// field selects its default.
type Limits struct {
	// OutputBytes caps each of stdout and stderr of run_command and run_code,
	// and one get_background_command read (EXEC-3). Default
	// [DefaultOutputBytes].
	OutputBytes int
	// ReadFileBytes caps read_file (FILE-2). Default [DefaultReadFileBytes].
	ReadFileBytes int
	// TransferBytes caps the decoded size of upload_file and the max_bytes of
	// download_file (BIN-1, BIN-2). Default [DefaultTransferBytes].
	TransferBytes int
	// BackgroundBufferBytes is how much output of one background command is
	// kept for reading. Default [DefaultBackgroundBufferBytes].
	BackgroundBufferBytes int
	// BackgroundCommands caps the background commands one session may keep.
	// Default [DefaultBackgroundCommands].
	BackgroundCommands int
	// FileTimeout bounds each file operation a tool makes in a sandbox
	// (read_file, write_file, list_files, upload_file, download_file and
	// run_code's source file): the daemon's /files routes have no bound of
	// their own. Default [DefaultFileTimeout].
	FileTimeout time.Duration
	// DestroyTimeout bounds each attempt of a close-time destroy. Default
	// [DefaultDestroyTimeout].
	DestroyTimeout time.Duration
	// TransferURLTTL is how long a signed transfer URL of upload_file and
	// download_file (transfer "url", BIN-3) stays valid. Default
	// [DefaultTransferURLTTL]; kept within [MinTransferURLTTL] and
	// [MaxTransferURLTTL].
	TransferURLTTL time.Duration
	// DestroyRetryFor is how long a close-time destroy that fails (the
	// provider is down, slow or rate limiting) is retried, with exponential
	// backoff, before the sandbox is reported as not destroyed (see
	// [Server.Unresolved]). The same bound applies to finding a sandbox
	// whose create request failed without a definite answer. Default
	// [DefaultDestroyRetryFor]; negative means a single attempt.
	DestroyRetryFor time.Duration
	// CreateCheckFor is how long the server keeps looking for a sandbox
	// that a create without a definite answer may have left (by the
	// create's [CreateTagKey] nonce): a platform can act on a create after
	// its caller gave up. One found within it is destroyed; one that
	// appears later ends by its own lifetime, which an owner lease keeps
	// short. Default [DefaultCreateCheckFor].
	CreateCheckFor time.Duration
	// DestroyConcurrency is how many close-time destroys run at once, across
	// the whole server. Default [DefaultDestroyConcurrency].
	DestroyConcurrency int
	// SandboxesPerSession caps the sandboxes one session may own at once
	// (created and not yet killed); create_sandbox beyond it is a
	// rate_limited tool error. Default [DefaultSandboxesPerSession].
	SandboxesPerSession int
	// CreatesPerPrincipal caps the create_sandbox calls of one principal
	// (a token's; every tokenless caller is the one local principal) in
	// flight at once, in both eras; create_sandbox beyond it is a
	// rate_limited tool error. Default [DefaultCreatesPerPrincipal].
	CreatesPerPrincipal int
	// SandboxesPerPrincipal caps the live sandboxes of one principal, in
	// both eras: the sandboxes its 2025 sessions own on this server, plus
	// the leased sandboxes its 2026-07-28 requests created on any replica
	// (counted by one platform list with its [PrincipalTagKey], at the
	// create's provider and region), plus its creates in flight here.
	// create_sandbox beyond it, explicit or implicit, is a rate_limited
	// tool error (QUOTA-1's answer). 0 (the default) is no cap and no list:
	// a library user with one principal has the account's own limit.
	SandboxesPerPrincipal int
}

// Defaults of [Limits].
const (
	DefaultOutputBytes           = 64 << 10
	DefaultReadFileBytes         = 1 << 20
	DefaultTransferBytes         = 16 << 20
	DefaultBackgroundBufferBytes = 1 << 20
	DefaultBackgroundCommands    = 64
	DefaultSandboxesPerSession   = 24
	DefaultFileTimeout           = 5 * time.Minute
	DefaultDestroyTimeout        = 30 * time.Second
	DefaultDestroyRetryFor       = 2 * time.Minute
	DefaultDestroyConcurrency    = 8
	DefaultCreateCheckFor        = 2 * time.Minute
	DefaultCreatesPerPrincipal   = 32
	// DefaultSandboxesPerPrincipal is the cap the serve command sets on a
	// server whose principals share one account (tokens file, OAuth).
	DefaultSandboxesPerPrincipal = 20
	DefaultTransferURLTTL        = 300 * time.Second
)

// Bounds of [Limits.TransferURLTTL] (BIN-3): a signed URL always expires,
// and within the hour.
const (
	MinTransferURLTTL = time.Second
	MaxTransferURLTTL = time.Hour
)

// withDefaults returns l with every zero field set to its default.
func (l Limits) withDefaults() Limits {
	if l.OutputBytes <= 0 {
		l.OutputBytes = DefaultOutputBytes
	}
	if l.ReadFileBytes <= 0 {
		l.ReadFileBytes = DefaultReadFileBytes
	}
	if l.TransferBytes <= 0 {
		l.TransferBytes = DefaultTransferBytes
	}
	if l.BackgroundBufferBytes <= 0 {
		l.BackgroundBufferBytes = DefaultBackgroundBufferBytes
	}
	if l.BackgroundCommands <= 0 {
		l.BackgroundCommands = DefaultBackgroundCommands
	}
	if l.FileTimeout <= 0 {
		l.FileTimeout = DefaultFileTimeout
	}
	if l.DestroyTimeout <= 0 {
		l.DestroyTimeout = DefaultDestroyTimeout
	}
	if l.TransferURLTTL <= 0 {
		l.TransferURLTTL = DefaultTransferURLTTL
	}
	l.TransferURLTTL = min(max(l.TransferURLTTL, MinTransferURLTTL), MaxTransferURLTTL)
	switch {
	case l.DestroyRetryFor == 0:
		l.DestroyRetryFor = DefaultDestroyRetryFor
	case l.DestroyRetryFor < 0:
		l.DestroyRetryFor = -1
	}
	if l.DestroyConcurrency <= 0 {
		l.DestroyConcurrency = DefaultDestroyConcurrency
	}
	if l.CreatesPerPrincipal <= 0 {
		l.CreatesPerPrincipal = DefaultCreatesPerPrincipal
	}
	if l.CreateCheckFor <= 0 {
		l.CreateCheckFor = DefaultCreateCheckFor
	}
	if l.SandboxesPerSession <= 0 {
		l.SandboxesPerSession = DefaultSandboxesPerSession
	}
	return l
}

// withDefaults returns a copy of d with defaults filled in. It never
// modifies d.
func (d *Deps) withDefaults() *Deps {
	if d == nil {
		d = &Deps{}
	}
	c := *d
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	c.Limits = c.Limits.withDefaults()
	c.Secrets = append([]string(nil), d.Secrets...)
	return &c
}

// SecretsFromEnv returns the API keys of every provider the platform knows,
// read through getenv (nil means os.Getenv) from each provider's APIKeyEnv.
// Blank values are skipped.
func SecretsFromEnv(p *sandbox.Platform, getenv func(string) string) []string {
	if getenv == nil {
		getenv = os.Getenv
	}
	var out []string
	for _, id := range p.Providers() {
		pc, ok := p.Provider(id)
		if !ok {
			continue
		}
		if v := strings.TrimSpace(getenv(pc.APIKeyEnv)); v != "" {
			out = append(out, v)
		}
	}
	return out
}
