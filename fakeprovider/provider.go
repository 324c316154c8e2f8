package fakeprovider

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/sandboxkit/sandboxkit/sandbox"
)

// DomainSuffix is the DNS suffix of every domain the fake hands out. With
// [Options.Canaries] each sandbox's domain is
// "canary-domain-<hex>.<DomainSuffix>", so a leaked domain is recognisable
// and the envd host "49983-<id>.<domain>" stays a valid DNS name; without,
// sandboxes report no domain and clients use E2B_DOMAIN (the fake-provider
// command prints DomainSuffix).
const DomainSuffix = "sandboxkit.test"

// Default values of [Options].
const (
	// DefaultSandboxLimit is the default number of concurrently running
	// sandboxes per account.
	DefaultSandboxLimit = 100
	// DefaultMaxTimeout is the default largest create/connect timeout (E2B Pro: 24 h).
	DefaultMaxTimeout = 24 * time.Hour
	// DefaultMaxLifetime is the default longest life of a sandbox, counted from its start.
	DefaultMaxLifetime = 24 * time.Hour
	// DefaultEnvdVersion is the envdVersion reported for templates that set
	// none: the current envd release (e2b-dev/infra packages/envd/pkg/version.go),
	// so the SDKs enable closeStdin, octet-stream uploads, file metadata and
	// watch entries, which they gate on this version.
	DefaultEnvdVersion = "0.6.13"
	// DefaultCreateTimeout is the lifetime of a sandbox created on the v1
	// route (POST /sandboxes) without "timeout" (E2B's NewSandbox: 15 s).
	DefaultCreateTimeout = 15 * time.Second
	// DefaultCreateTimeoutV2 is the lifetime of a sandbox created on the v2
	// route (POST /v2/sandboxes) without "timeout" (E2B's NewSandboxV2:
	// 300 s; e2b@2.51.0 index.d.ts:2389).
	DefaultCreateTimeoutV2 = 300 * time.Second
	// DefaultConnectTimeoutV2 is the timeout of a v2 connect whose body has
	// none (E2B's ConnectSandboxV2: 300 s; e2b@2.51.0 index.d.ts:2219).
	DefaultConnectTimeoutV2 = 300 * time.Second
)

// A RouteFamily selects which of the two route families of create and
// connect a Provider serves.
type RouteFamily int

// The route families.
const (
	// AllRoutes serves both the v1 and the v2 routes (the platform today).
	AllRoutes RouteFamily = iota
	// V1Routes serves only POST /sandboxes and POST /sandboxes/{id}/connect;
	// the v2 routes answer 404, as on a platform that predates them.
	V1Routes
	// V2Routes serves only POST /v2/sandboxes and POST
	// /v2/sandboxes/{id}/connect; the v1 routes answer 404, as on a platform
	// that has retired them.
	V2Routes
)

// ClientID is the clientID the platform reports for every sandbox when
// canaries are off (E2B's constant for sandboxes it lists; the field is
// deprecated).
const ClientID = "6532622b"

// Options configures a [Provider]. The zero value of each field selects its
// documented default; a nil *Options selects all defaults.
type Options struct {
	// APIKey is the only X-API-Key the fake accepts; it must start with
	// "e2b_". If empty, a random "e2b_" + 40 hex digits key is generated;
	// read it with [Provider.APIKey].
	APIKey string
	// Clock supplies the time. If nil, the system clock is used.
	Clock Clock
	// SandboxLimit is the number of sandboxes that may run at once; a create
	// or resume beyond it gets 429. If zero, [DefaultSandboxLimit].
	SandboxLimit int
	// Templates maps a template alias to its build. If nil,
	// [DefaultTemplates]. Creating a sandbox from a template that matches
	// neither a key nor a Template.ID gives 404.
	Templates map[string]Template
	// MaxTimeout is the largest "timeout" accepted on create and connect. If
	// zero, [DefaultMaxTimeout].
	MaxTimeout time.Duration
	// MaxLifetime caps every sandbox's endAt at startedAt+MaxLifetime. If
	// zero, [DefaultMaxLifetime].
	MaxLifetime time.Duration
	// AcceptResources makes create accept "cpuCount" and "memoryMB" in the
	// body, as an E2B-compatible provider that lets callers size sandboxes
	// would. When false (E2B's own behaviour: resources are fixed per
	// template build) either field gives 400.
	AcceptResources bool
	// NewDaemon builds the in-sandbox daemon (envd) of each sandbox, once
	// when the sandbox is created or seeded; the daemon is closed when the
	// sandbox is killed or expires. If nil, [InMemoryDaemon]: an in-memory
	// filesystem and shell that never start a host process.
	NewDaemon func(DaemonConfig) Daemon
	// NoDaemon gives sandboxes no daemon at all: every envd request gets
	// 502. It overrides NewDaemon.
	NoDaemon bool
	// OnDebugRoute, if set, hears each routing decision on an e2b 1.x
	// debug port worth telling the user (see [ListenDebug]).
	OnDebugRoute func(DebugEvent)
	// Routes restricts create and connect to one route family; the zero
	// value serves both.
	Routes RouteFamily
	// Canaries turns on the leak detectors a faithful client can see: a
	// [CanaryMetadataKey] entry added to every sandbox's metadata, a
	// [CanaryEnvVar] added to its environment, a canary clientID and domain
	// ("canary-domain-<hex>.sandboxkit.test") in place of the platform's
	// constant clientID and null domain, and a canary reference (with a
	// request URL) appended to every error message. Off, the fake answers
	// what the platform answers; the API key and the access tokens, which
	// the platform itself makes secret, are canaries either way. The
	// conformance kit turns this on.
	Canaries bool
}

// A Template is the build a sandbox starts from. Its resources fill the
// cpuCount, memoryMB and diskSizeMB of every sandbox created from it.
type Template struct {
	// ID is the template ID reported as "templateID". If empty, the alias
	// (the key in [Options.Templates]) is used as the ID.
	ID string
	// CPUCount is the number of vCPUs.
	CPUCount int
	// MemoryMB is the memory in MiB.
	MemoryMB int
	// DiskSizeMB is the disk size in MiB.
	DiskSizeMB int
	// EnvdVersion is the daemon version reported as "envdVersion". If
	// empty, [DefaultEnvdVersion].
	EnvdVersion string
	// Owned marks a template of the account's own team: GET
	// /templates/aliases/{alias} answers 200 with its ID. Any other template
	// is another team's public one, as E2B's "base" is to every account:
	// the route answers 403, which the SDKs read as "it exists".
	Owned bool
	// Public is the "public" field of that 200 answer.
	Public bool
}

// DefaultTemplates returns the templates a Provider knows when
// [Options.Templates] is nil, the two the SDKs name by default: "base"
// (2 vCPU, 512 MiB memory, 512 MiB disk; Sandbox's default template) and
// "code-interpreter-v1" (2 vCPU, 1024 MiB memory, 1024 MiB disk; the Code
// Interpreter SDK's). Both are E2B's public templates, not the account's
// own (Owned false).
func DefaultTemplates() map[string]Template {
	return map[string]Template{
		"base":                {ID: "rki5dems9wqfm4r03t7g", CPUCount: 2, MemoryMB: 512, DiskSizeMB: 512, EnvdVersion: DefaultEnvdVersion},
		"code-interpreter-v1": {ID: "nlhz8vlwyupq845jsdg9", CPUCount: 2, MemoryMB: 1024, DiskSizeMB: 1024, EnvdVersion: DefaultEnvdVersion},
	}
}

// A Daemon is one sandbox's in-sandbox daemon (envd). The Provider forwards
// to it every envd request for its sandbox, and calls Close once when the
// sandbox is killed or expires.
type Daemon interface {
	http.Handler
	// Close releases the daemon; in-flight requests should end soon after.
	Close()
}

// A Rebooter is a [Daemon] that can be cold-booted. The Provider reboots
// the daemon of a sandbox paused with "memory": false when it is resumed;
// a daemon without Reboot is kept as it was. [InMemoryDaemon]'s reboot
// kills its processes, ends its watches, keeps its files and changes
// /proc/sys/kernel/random/boot_id.
type Rebooter interface {
	Reboot()
}

// DaemonConfig tells [Options.NewDaemon] which sandbox it serves.
type DaemonConfig struct {
	// SandboxID is the sandbox's ID.
	SandboxID string
	// TemplateID is the ID of the template the sandbox was created from
	// (envd exports it as E2B_TEMPLATE_ID).
	TemplateID string
	// AccessToken is the envdAccessToken the daemon must require in
	// X-Access-Token; "" for a sandbox created on the v1 route without
	// secure: true (every v2 sandbox has one).
	AccessToken string
	// EnvVars are the sandbox's environment variables: the create request's
	// envVars, plus one canary entry when [Options.Canaries] is set.
	EnvVars map[string]string
}

// A Provider is an in-memory, E2B-compatible control plane. It is an
// [http.Handler] serving both the control-plane API and, for requests
// addressed to a sandbox, that sandbox's daemon. Reach it in-process with
// [Provider.HTTPClient], [Provider.RoundTripper] or [Provider.Register], or
// over loopback with [Provider.Listen] or [Provider.Start]. It is safe for
// concurrent use.
type Provider struct {
	apiKey          string
	clock           Clock
	limit           int
	templates       map[string]Template
	maxTimeout      time.Duration
	maxLifetime     time.Duration
	acceptResources bool
	newDaemon       func(DaemonConfig) Daemon
	routes          RouteFamily
	canaryMode      bool

	controlMux *http.ServeMux
	envdMux    *http.ServeMux

	journal  *Journal
	faults   faultTable
	canaries canaryBook

	mu        sync.Mutex
	sandboxes map[string]*sandboxRecord
	snapshots map[string]*snapshotRecord // by template ID

	codeInterps    codeInterpTable // port 49999, see codeinterp.go
	portTransports portTransports  // other ports of a PortDialer daemon, see ports.go

	debugMu      sync.Mutex // serialises debugSandbox: one implicit sandbox at most
	onDebugRoute func(DebugEvent)
}

// New returns a Provider configured by opts; nil opts selects all defaults.
// It panics when opts.APIKey is set but lacks E2B's "e2b_" prefix (such a
// key could never be accepted).
func New(opts *Options) *Provider {
	if opts == nil {
		opts = &Options{}
	}
	p := &Provider{
		apiKey:          opts.APIKey,
		clock:           opts.Clock,
		limit:           opts.SandboxLimit,
		maxTimeout:      opts.MaxTimeout,
		maxLifetime:     opts.MaxLifetime,
		acceptResources: opts.AcceptResources,
		newDaemon:       opts.NewDaemon,
		routes:          opts.Routes,
		canaryMode:      opts.Canaries,
		onDebugRoute:    opts.OnDebugRoute,
		sandboxes:       make(map[string]*sandboxRecord),
		snapshots:       make(map[string]*snapshotRecord),
	}
	switch {
	case opts.NoDaemon:
		p.newDaemon = nil
	case p.newDaemon == nil:
		p.newDaemon = InMemoryDaemon
	}
	if p.apiKey == "" {
		p.apiKey = apiKeyPrefix + randomHex(20)
	} else if !strings.HasPrefix(p.apiKey, apiKeyPrefix) {
		panic(fmt.Sprintf("fakeprovider: New: Options.APIKey must start with %q, as E2B keys do", apiKeyPrefix))
	}
	if p.clock == nil {
		p.clock = realClock{}
	}
	if p.limit <= 0 {
		p.limit = DefaultSandboxLimit
	}
	if p.maxTimeout <= 0 {
		p.maxTimeout = DefaultMaxTimeout
	}
	if p.maxLifetime <= 0 {
		p.maxLifetime = DefaultMaxLifetime
	}
	if opts.Templates == nil {
		p.templates = DefaultTemplates()
	} else {
		p.templates = make(map[string]Template, len(opts.Templates))
		for alias, t := range opts.Templates {
			p.templates[alias] = t
		}
	}
	p.journal = newJournal()
	p.controlMux = p.newControlMux()
	p.envdMux = p.newEnvdMux()
	return p
}

// APIKey returns the X-API-Key the fake accepts.
func (p *Provider) APIKey() string { return p.apiKey }

// Now returns the current time of the Provider's clock.
func (p *Provider) Now() time.Time { return p.clock.Now() }

// ServeHTTP serves one request: an envd request when it is addressed to a
// sandbox (host "49983-<id>.<domain>" or header E2b-Sandbox-Id), or it
// arrived on an e2b 1.x debug port (see [ListenDebug]), else a
// control-plane request.
func (p *Provider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if id, port, ok := p.envdTarget(r); ok {
		if port == codeInterpPort() {
			p.serveCodeInterp(w, r, id)
			return
		}
		p.serveEnvd(w, r, id, port)
		return
	}
	if port, ok := debugPort(r.Context()); ok {
		p.serveDebugPort(w, r, port)
		return
	}
	p.controlMux.ServeHTTP(w, p.debugAPIRequest(r))
}

// newControlMux routes each control-plane operation of the route table to
// its handler, the v2 routes of create and connect to theirs (journalled
// under the same operation), the routes outside the table (alias lookup,
// fork, snapshots, network, resume, refreshes, logs, sandboxes' metrics)
// to theirs, each journalled under its route, and anything else to op ""
// and 404.
func (p *Provider) newControlMux() *http.ServeMux {
	handlers := map[string]func(http.ResponseWriter, *http.Request){
		sandbox.OpListSandboxes:   p.handleList,
		sandbox.OpCreateSandbox:   p.handleCreateV1,
		sandbox.OpGetSandbox:      p.handleGet,
		sandbox.OpKillSandbox:     p.handleKill,
		sandbox.OpSetTimeout:      p.handleSetTimeout,
		sandbox.OpConnectSandbox:  p.handleConnectV1,
		sandbox.OpPauseSandbox:    p.handlePause,
		sandbox.OpSandboxMetrics:  p.handleMetrics,
		sandbox.OpListSandboxesV1: p.handleListV1,
	}
	mux := http.NewServeMux()
	for _, op := range sandbox.ControlPlaneOps() {
		h, ok := handlers[op]
		if !ok {
			panic(fmt.Sprintf("fakeprovider: no handler for route %q", op))
		}
		if p.routes == V2Routes && (op == sandbox.OpCreateSandbox || op == sandbox.OpConnectSandbox) {
			// A refused family looks like a path the platform never had.
			mux.Handle(op, p.controlPlane("", p.handleUnknownRoute))
			continue
		}
		mux.Handle(op, p.controlPlane(op, h))
	}
	if p.routes != V1Routes {
		mux.Handle(sandbox.RouteCreateSandboxV2, p.controlPlane(sandbox.OpCreateSandbox, p.handleCreateV2))
		mux.Handle(sandbox.RouteConnectSandboxV2, p.controlPlane(sandbox.OpConnectSandbox, p.handleConnectV2))
	}
	mux.Handle(RouteTemplateAlias, p.controlPlane(RouteTemplateAlias, p.handleTemplateAlias))
	p.registerForkRoutes(mux)
	p.registerLegacyRoutes(mux)
	mux.Handle("/", p.controlPlane("", p.handleUnknownRoute))
	return mux
}

// handleUnknownRoute answers a path outside the route table.
func (p *Provider) handleUnknownRoute(w http.ResponseWriter, r *http.Request) {
	p.writeError(w, r, http.StatusNotFound, "Not Found")
}

// randomHex returns n random bytes as 2n hex digits.
func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Errorf("fakeprovider: reading random bytes: %w", err))
	}
	return hex.EncodeToString(b)
}

// randomID returns n random characters from [a-z0-9].
func randomID(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Errorf("fakeprovider: reading random bytes: %w", err))
	}
	var sb strings.Builder
	for _, c := range b {
		sb.WriteByte(alphabet[int(c)%len(alphabet)])
	}
	return sb.String()
}
