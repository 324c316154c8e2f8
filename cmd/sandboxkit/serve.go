package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxkit/sandboxkit/sandbox"
	"github.com/sandboxkit/sandboxkit/server"
)

// serveDefaultTokenEnv names the environment variable that holds the HTTP bearer token.
const serveDefaultTokenEnv = "SANDBOXKIT_HTTP_TOKEN"

// serveConfig is what the serve flags map to.
type serveConfig struct {
	httpAddr       string
	fake           bool
	configPath     string
	logLevel       string
	sessionTimeout time.Duration
	tokenEnv       string
	tokensFile     string
	oauth          serveOAuthConfig
	maxBodyBytes   int64
	shutdownWait   time.Duration

	providerTimeout time.Duration
	fileTimeout     time.Duration
	transferURLTTL  time.Duration
	destroyRetry    time.Duration
	maxSessions     int
	maxPerClient    int
	maxPerPrincipal int
	readTimeout     time.Duration
	writeTimeout    time.Duration
	clientIPHeader  string
	maxEnvelope     int64
	maxInFlight     int64
	evictIdle       time.Duration
	perSession      int
	createsPerPrin  int
	livePerPrin     int
	ownOnly         bool

	// Ownership (docs/deploy.md): the instance ID sandboxes are tagged with, and
	// whether a start sweeps what an earlier life of it left.
	instance     string
	sweepAtStart bool
	ownerLease   time.Duration
}

// serveDefaultOwnerLease is the default --owner-lease: with default flags
// no owned sandbox of a dead process outlives it, and a sandbox whose
// session asked for at most this lifetime is told exactly what it asked
// for (the contract's TIMEOUT-3 and RENEW-1 bodies hold unchanged up to
// it). Renewals cost one call per such sandbox per 40 minutes.
const serveDefaultOwnerLease = time.Hour

// serveInstanceEnv names the environment variable that gives the instance
// ID when --instance is not set.
const serveInstanceEnv = "SANDBOXKIT_INSTANCE"

// newServeCommand runs the reference MCP server.
func newServeCommand() *cobra.Command {
	var cfg serveConfig
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the reference MCP server (stdio, or Streamable HTTP with --http)",
		Long: serveToolsParagraph() + `

Transports. Without --http it speaks MCP over stdin and stdout (one session,
ending at end of input). With --http ADDR it serves Streamable HTTP at
http://ADDR/mcp and a health check at /healthz. Both transports share one
server, so tools/list and results are identical. Logs go to stderr only.

Provider credentials. The default provider "e2b" reads E2B_API_KEY, and
optionally E2B_DOMAIN, E2B_API_URL and E2B_SANDBOX_URL. More providers come
from a JSON file given with --config (each names the environment variable
holding its key; keys never go in the file). With no credentials at all the
command refuses to start, unless --fake is given: then it runs against the
embedded in-memory fake provider, and nothing leaves the process.

Two eras. The server speaks MCP 2026-07-28 (sessionless) beside the 2025
versions, on one endpoint or process; tools/list is the same in both.
server/discover lists every version; initialize negotiates only 2025 ones.

2026-07-28 requests have no session and no default sandbox: every tool but
create_sandbox and list_sandboxes needs sandbox_id (no_default_sandbox
otherwise), and nothing is created implicitly. A sandbox such a request
creates has a lease: create_sandbox's timeout (300 s by default), written
with the caller's principal into the sandbox's platform metadata
(sandboxkit_lease, sandboxkit_principal). Each execution, file, background or
binary call on it renews it to that lease, on any replica; nothing renews it
in between, and only kill_sandbox or expiry ends it: never the end of a
request or connection, end of stdin, or shutdown. Over HTTP such requests
(MCP-Protocol-Version 2026-07-28) are POSTs served statelessly: no session
ID, no session cap; GET and DELETE get 405.

2025 sessions. Each MCP session has at most one default sandbox and owns the
sandboxes it creates. When the session ends (end of stdin, HTTP DELETE, HTTP
idle timeout, or server shutdown on SIGINT/SIGTERM) every sandbox it owns is
destroyed, and no other sandbox is touched. A session owns at most
--sandboxes-per-session sandboxes at once.

Principals. A sandbox or command_id that a 2026-07-28 request created
belongs to its caller's principal and is not_found to any other. On stdio,
and over HTTP without a token, there is one principal ("local"); with the
token of --token-env, one ("token"). --tokens-file FILE gives several: each
line "PRINCIPAL TOKEN" (blank lines and lines starting with # skipped), or a
JSON object {"PRINCIPAL": "TOKEN", ...}; a principal is 1 to 63 letters,
digits, '.', '_' or '-', a token at least 16 characters. Clients send
"Authorization: Bearer TOKEN". A 2025 session belongs to the principal that
opened it: another principal's request with its Mcp-Session-Id gets 403.

` + serveOAuthHelp + `

Results. A successful call returns structuredContent, valid against the
tool's outputSchema, and the same JSON as one text block. A failed call is a
tool error: isError, and one text block holding {"error": {"category",
"http_status", "code", "field", "recovery"}} (absent members omitted), with no
structuredContent, so that clients which validate structuredContent against
the outputSchema (the official TypeScript SDK does) pass the error on.

Transfer URLs. upload_file and download_file with transfer "url" move no
bytes through MCP: they return a signed envd URL (no API key, no access token
in it) that accepts a plain POST of the bytes, or serves them to a plain GET,
until expires_at, --transfer-url-ttl from the call. A sandbox without an
access token gets a tool error instead.

Provider outages. A tool call's control-plane requests, and its in-sandbox
requests that have no longer bound of their own, must all be answered within
--provider-timeout, together (one deadline per call, not per request); file
transfers within --file-timeout; a command within its own timeout. A provider
that hangs, or answers a byte at a time, gives the tool a timeout error. A close-time destroy that fails is retried with backoff
for --destroy-retry; a create whose answer is lost is followed by a search for
the sandbox it may have made (every sandbox carries the metadata tag
sandboxkit_create), which is then destroyed. A sandbox that still could not be
destroyed is logged at error level with its ID ("sandbox NOT destroyed"), and
the command exits with status 1 after naming how many.

HTTP security. The listen address should be a loopback address
(127.0.0.1:8080, [::1]:8080, localhost:8080). A non-loopback address is
accepted only when a bearer token is set in the environment variable named by
--token-env (default ` + serveDefaultTokenEnv + `), or with --tokens-file or
--oauth-issuer; clients then send "Authorization: Bearer <token>".
DNS-rebinding protection and cross-origin protection are always on, and
request bodies are limited.

Principals. Each caller is a principal: a token's subject (--oauth-issuer),
a --tokens-file name, or the one local principal of a tokenless server.
Another principal's sandboxes, command_ids, 2025 sessions and transfer URLs
are not_found (or refused) to a caller. Sandbox IDs this deployment did not
create stay reachable by ID, unless --own-sandboxes-only confines each
principal to the sandboxes created for it: then any other ID is not_found,
and list_sandboxes lists only the principal's 2026-07-28 sandboxes.

Ownership and crashes. Every sandbox a 2025 session creates carries
platform metadata naming its owner: sandboxkit_instance (the --instance ID, or
$SANDBOXKIT_INSTANCE), sandboxkit_boot (this life of the process) and
sandboxkit_session (and the session's principal,
sandboxkit_session_principal); each sandbox's ID is logged when it is created and
destroyed. After kill -9 nothing runs the close-time destroys: give each
replica a stable instance ID (the name its orchestrator gives it) and the
replica started again under that ID destroys, before it serves, every
sandbox tagged with it (--sweep-at-start). For an instance that will not
come back, run "sandboxkit sweep --orphans --instance ID". A process holds
a lock file for its instance (under the user's cache directory) while it
lives, and the start sweep runs only when no other live process of the
instance on this host holds it: a second process started under the same ID
while the first serves (an MCP client's probe, for example) sweeps nothing.
Processes of one instance on different hosts cannot see each other's lock:
give each replica its own ID. Sandboxes that 2026-07-28 requests create
carry no instance tag: no sweep destroys them (they end by their lease).
Without an instance ID the process holds a lock file for its random one,
and a later start on this host sweeps the sandboxes of every such instance
whose process died (its lock file left, no live process holding it).
With --owner-lease D (default 1h) the platform is never told a lifetime
longer than D: the server renews it every D/3 while the owning session
lives, up to the lifetime the session asked for (which get_sandbox keeps
reporting), so a dead server's sandboxes end within D even if it never
comes back. See docs/deploy.md.

HTTP limits. At most --max-sessions sessions are live at once, at most
--max-sessions-per-principal of one principal with a token (default 64), and
at most --max-sessions-per-client from one anonymous client (default 64); a
session counts from the moment its initialize is answered. At a limit, the
session idle longest (for at least --evict-idle) is closed, its sandboxes
destroyed, to make room; at --max-sessions with none idle, a session of the
client or principal holding the most is closed for a caller holding fewer,
never one with a call in flight;
when none is, the new session is refused: 503 for the server's limit, 429 for
the client's, with a JSON-RPC error saying which. A client is its IP address
(an IPv6 address by its /64), or, behind a reverse proxy you trust, the
address in the header named by --client-ip-header (the last element of
X-Forwarded-For, for example). A client must send a request's headers and
body within --read-timeout, and take each piece of a response within
--write-timeout; a client that stalls is cut off without affecting its
session. Keep-alive connections idle for 2 minutes are closed.

Sandbox quotas. A session owns at most --sandboxes-per-session sandboxes; a
principal has at most --creates-per-principal creates in flight and, with
--sandboxes-per-principal N, at most N live sandboxes in both eras (its
sessions' owned ones here, its leased ones on any replica, counted by one
provider list per create; default 20 with --tokens-file or --oauth-issuer,
else no cap). Beyond a cap, create_sandbox (explicit or implicit) is a
rate_limited tool error and nothing is created.

Message limits. Every message is checked strictly before it is handled: a
duplicate member name, data after the JSON value, an id that is not a string
or an integer, or a batch is refused with a JSON-RPC error (HTTP 400; on
stdio the line is answered and the session goes on). A message other than
tools/call, and a tools/call without its arguments, may be at most
--max-envelope-bytes (413 beyond); request bodies and inline download_file
answers held at once across the server are bounded by --max-inflight-bytes:
a large request that finds no room within 15 s gets 503 with Retry-After, a
download the tool error rate_limited (code server_busy).

Examples:

  E2B_API_KEY=e2b_... sandboxkit serve
  sandboxkit serve --fake
  sandboxkit serve --http 127.0.0.1:8080 --session-timeout 10m
  SANDBOXKIT_HTTP_TOKEN=$(openssl rand -hex 32) sandboxkit serve --http 0.0.0.0:8080
  sandboxkit serve --config providers.json --log-level debug
  sandboxkit serve --http 127.0.0.1:8081 --instance replica-0
  sandboxkit serve --http 0.0.0.0:8080 --tokens-file /etc/sandboxkit/tokens
  sandboxkit serve --http 0.0.0.0:8080 --oauth-issuer https://TENANT.us.auth0.com/ --oauth-audience https://mcp.example.com/mcp`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServe(cmd.Context(), cfg, os.Getenv, os.Stderr)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.httpAddr, "http", "", "serve Streamable HTTP on this address (e.g. 127.0.0.1:8080) instead of stdio")
	f.BoolVar(&cfg.fake, "fake", false, "run against the embedded in-memory fake provider instead of a real one")
	f.StringVar(&cfg.configPath, "config", "", "JSON file listing extra providers (IDs, URLs, regions, API key variable names)")
	f.StringVar(&cfg.logLevel, "log-level", "info", "log level on stderr: debug, info, warn or error")
	f.DurationVar(&cfg.sessionTimeout, "session-timeout", server.DefaultSessionTimeout, "close an HTTP session idle this long and destroy its sandboxes (0: never)")
	f.StringVar(&cfg.tokenEnv, "token-env", serveDefaultTokenEnv, "environment variable holding the HTTP bearer token (required for a non-loopback --http address)")
	f.StringVar(&cfg.tokensFile, "tokens-file", "", "file of HTTP bearer tokens and their principals: lines \"PRINCIPAL TOKEN\", or a JSON object {\"PRINCIPAL\": \"TOKEN\"}; another principal's sandboxes and command_ids are not_found")
	addServeOAuthFlags(f, &cfg.oauth)
	f.BoolVar(&cfg.ownOnly, "own-sandboxes-only", false, "confine each principal to the sandboxes created for it: a sandbox_id this deployment did not create for the caller (an external ID, another session's sandbox) is not_found, and list_sandboxes lists only the principal's 2026-07-28 sandboxes")
	f.Int64Var(&cfg.maxBodyBytes, "max-request-bytes", 0, "largest HTTP request body accepted (0: room for the largest upload)")
	f.DurationVar(&cfg.shutdownWait, "shutdown-timeout", 60*time.Second, "how long shutdown waits for owned sandboxes to be destroyed")
	f.DurationVar(&cfg.providerTimeout, "provider-timeout", sandbox.DefaultRequestTimeout, "longest a tool call waits for the provider, all its requests together (control plane, and in-sandbox calls without a bound of their own)")
	f.DurationVar(&cfg.fileTimeout, "file-timeout", server.DefaultFileTimeout, "longest one file operation in a sandbox may take (read, write, list, upload, download)")
	f.DurationVar(&cfg.transferURLTTL, "transfer-url-ttl", server.DefaultTransferURLTTL, "how long the signed URL of upload_file / download_file with transfer \"url\" stays valid (1s to 1h)")
	f.DurationVar(&cfg.destroyRetry, "destroy-retry", server.DefaultDestroyRetryFor, "how long a failed close-time destroy is retried, with backoff, before the sandbox is reported as not destroyed (0: no retry)")
	f.IntVar(&cfg.maxSessions, "max-sessions", server.DefaultMaxSessions, "most live HTTP sessions at once; beyond, a new session gets 503 (0: no cap)")
	f.IntVar(&cfg.maxPerClient, "max-sessions-per-client", server.DefaultMaxSessionsPerClient, "most live HTTP sessions from one anonymous client (no token: IP address, IPv6 /64, or --client-ip-header); beyond, a new session gets 429 (0: no cap but --max-sessions)")
	f.IntVar(&cfg.maxPerPrincipal, "max-sessions-per-principal", server.DefaultMaxSessionsPerPrincipal, "most live HTTP sessions of one principal (a token of --tokens-file or --token-env), from any address; beyond, a new session gets 429 (0: no cap but --max-sessions)")
	f.IntVar(&cfg.perSession, "sandboxes-per-session", server.DefaultSandboxesPerSession, "most sandboxes one session may own at once; create_sandbox beyond is a rate_limited tool error")
	f.IntVar(&cfg.createsPerPrin, "creates-per-principal", server.DefaultCreatesPerPrincipal, "most create_sandbox calls of one principal (a token's; tokenless callers are one local principal) in flight at once, in both eras; beyond is a rate_limited tool error")
	f.IntVar(&cfg.livePerPrin, "sandboxes-per-principal", -1, "most live sandboxes of one principal, in both eras (its sessions' owned ones on this server, its leased ones on any replica, by one provider list per create); beyond is a rate_limited tool error (default: "+strconv.Itoa(server.DefaultSandboxesPerPrincipal)+" with --tokens-file or --oauth-issuer, else 0: no cap, the account's own limit)")
	f.StringVar(&cfg.clientIPHeader, "client-ip-header", "", "header set by a trusted reverse proxy to the client's address (e.g. X-Forwarded-For, last element used); default: the connection's address")
	f.Int64Var(&cfg.maxEnvelope, "max-envelope-bytes", server.DefaultMaxEnvelopeBytes, "largest HTTP message other than tools/call, and tools/call without its arguments; beyond, 413")
	f.Int64Var(&cfg.maxInFlight, "max-inflight-bytes", server.DefaultMaxInFlightBytes, "request bytes and inline download answers held at once across the HTTP server; a large request waits, then gets 503, a download a rate_limited tool error (0: no bound)")
	f.DurationVar(&cfg.evictIdle, "evict-idle", server.DefaultEvictIdle, "at a session limit, close the session idle longest if idle this long, to admit a new one (0: never evict)")
	f.DurationVar(&cfg.readTimeout, "read-timeout", server.DefaultReadTimeout, "longest an HTTP client may take to send a request's headers, and its body (0: no bound)")
	f.DurationVar(&cfg.writeTimeout, "write-timeout", server.DefaultWriteTimeout, "longest an HTTP client may take to accept each piece of a response (0: no bound)")

	// Ownership flags (docs/deploy.md, "Ownership that survives the owner").
	f.StringVar(&cfg.instance, "instance", "", "stable ID of this server instance, written into every sandbox's metadata (default $"+serveInstanceEnv+"; unset: a random one)")
	f.BoolVar(&cfg.sweepAtStart, "sweep-at-start", true, "with a stable instance ID, destroy every sandbox tagged with it before serving: what this instance's previous life left (skipped while another live process of the instance runs on this host)")
	f.DurationVar(&cfg.ownerLease, "owner-lease", serveDefaultOwnerLease, "bound on how long an owned sandbox outlives this process if it dies without cleanup: the platform is told at most this lifetime, renewed every third of it while the session lives (0: off; at least 3s; changes the timeout sent by set_sandbox_timeout and renewals to at most the lease)")
	return cmd
}

// serveLivePerPrincipal resolves --sandboxes-per-principal: unset (-1), it
// is server.DefaultSandboxesPerPrincipal where several principals share the
// account (tokens file, OAuth), and 0 (no cap, no list per create) where
// there is one principal, whose cap would only be the account's own
// concurrency limit, which the platform enforces.
func serveLivePerPrincipal(flag int, principals bool) int {
	switch {
	case flag >= 0:
		return flag
	case principals:
		return server.DefaultSandboxesPerPrincipal
	default:
		return 0
	}
}

// serveLimits maps the flags onto the server's limits.
func serveLimits(cfg serveConfig) server.Limits {
	retry := cfg.destroyRetry
	if retry == 0 {
		retry = -1 // a single attempt
	}
	return server.Limits{FileTimeout: cfg.fileTimeout, DestroyRetryFor: retry, SandboxesPerSession: cfg.perSession, CreatesPerPrincipal: cfg.createsPerPrin, SandboxesPerPrincipal: cfg.livePerPrin, TransferURLTTL: cfg.transferURLTTL}
}

// serveHTTPOptions maps the flags onto the HTTP options; a flag's 0 ("no
// bound") is the option's negative value.
func serveHTTPOptions(cfg serveConfig, token string, tokens map[string]string) *server.HTTPOptions {
	neg := func(d time.Duration) time.Duration {
		if d == 0 {
			return -1
		}
		return d
	}
	negInt := func(n int) int {
		if n == 0 {
			return -1
		}
		return n
	}
	negInt64 := func(n int64) int64 {
		if n == 0 {
			return -1
		}
		return n
	}
	return &server.HTTPOptions{
		Token:                   token,
		Tokens:                  tokens,
		SessionTimeout:          neg(cfg.sessionTimeout),
		MaxRequestBodyBytes:     cfg.maxBodyBytes,
		MaxSessions:             negInt(cfg.maxSessions),
		MaxSessionsPerClient:    negInt(cfg.maxPerClient),
		MaxSessionsPerPrincipal: negInt(cfg.maxPerPrincipal),
		ClientIPHeader:          cfg.clientIPHeader,
		MaxEnvelopeBytes:        cfg.maxEnvelope,
		MaxInFlightBytes:        negInt64(cfg.maxInFlight),
		EvictIdle:               neg(cfg.evictIdle),
		ReadTimeout:             neg(cfg.readTimeout),
		WriteTimeout:            neg(cfg.writeTimeout),
	}
}

// runServe builds the platform and the server and serves until the
// transport ends or ctx is cancelled; cleanup finishes before it returns.
func runServe(ctx context.Context, cfg serveConfig, getenv func(string) string, stderr io.Writer) error {
	level, err := serveLogLevel(cfg.logLevel)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	if cfg.transferURLTTL < server.MinTransferURLTTL || cfg.transferURLTTL > server.MaxTransferURLTTL {
		return fmt.Errorf("--transfer-url-ttl %s: want 1s to 1h (a signed URL always expires)", cfg.transferURLTTL)
	}

	var token string
	var tokens map[string]string
	if cfg.tokensFile != "" {
		if cfg.httpAddr == "" {
			return errors.New("--tokens-file needs --http: stdio has one principal")
		}
		data, err := os.ReadFile(cfg.tokensFile)
		if err != nil {
			return fmt.Errorf("--tokens-file: %w", err)
		}
		if tokens, err = server.ParseTokens(data); err != nil {
			return fmt.Errorf("--tokens-file %s: %w", cfg.tokensFile, err)
		}
	}
	if cfg.httpAddr != "" {
		if _, _, err := net.SplitHostPort(cfg.httpAddr); err != nil {
			return fmt.Errorf("--http %q: want host:port, e.g. 127.0.0.1:8080", cfg.httpAddr)
		}
		token = strings.TrimSpace(getenv(cfg.tokenEnv))
		if !server.IsLoopbackAddr(cfg.httpAddr) && token == "" && len(tokens) == 0 && cfg.oauth.issuer == "" {
			return fmt.Errorf("--http %s is not a loopback address: set a bearer token in $%s (or listen on 127.0.0.1)", cfg.httpAddr, cfg.tokenEnv)
		}
	}
	oauth, err := serveOAuth(ctx, cfg, token, logger)
	if err != nil {
		return err
	}
	cfg.livePerPrin = serveLivePerPrincipal(cfg.livePerPrin, len(tokens) > 0 || cfg.oauth.issuer != "")

	var (
		platform *sandbox.Platform
		secrets  []string
		cleanup  = func() {}
	)
	if cfg.fake {
		if cfg.configPath != "" {
			return errors.New("--fake and --config cannot be combined: the fake provider is the only provider")
		}
		platform, secrets, cleanup, err = serveFakePlatform(cfg.providerTimeout)
		if err != nil {
			return err
		}
		fmt.Fprintln(stderr, "sandboxkit serve: using the embedded in-memory FAKE provider (--fake): no real sandboxes are created")
	} else {
		platform, err = serveRealPlatform(cfg.configPath, getenv, cfg.providerTimeout)
		if err != nil {
			return err
		}
		secrets = server.SecretsFromEnv(platform, getenv)
	}
	defer cleanup()
	if token != "" {
		secrets = append(secrets, token)
	}
	for tok := range tokens {
		secrets = append(secrets, tok)
	}

	instance := cfg.instance
	if instance == "" {
		instance = strings.TrimSpace(getenv(serveInstanceEnv))
	}
	srv, err := server.New(&server.Deps{Platform: platform, Logger: logger, Secrets: secrets, Limits: serveLimits(cfg), Instance: instance, OwnerLease: cfg.ownerLease, OwnSandboxesOnly: cfg.ownOnly}, &server.Options{Version: serveVersion()})
	if err != nil {
		return err
	}
	if instance != "" {
		release := serveHoldInstance(ctx, srv, cfg.sweepAtStart, logger)
		defer release()
	} else {
		release := serveHoldAnonymous(ctx, srv, platform, cfg.sweepAtStart, logger)
		defer release()
	}
	if cfg.httpAddr == "" {
		logger.Info("serving MCP on stdio")
		err := srv.RunStdio(ctx)
		// The session's destroys have finished (or been given up on):
		// report any sandbox that could not be destroyed.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.shutdownWait)
		defer cancel()
		if serr := srv.Shutdown(sctx); serr != nil && err == nil {
			err = serr
		}
		return err
	}
	return serveStreamableHTTP(ctx, srv, cfg, token, tokens, oauth, logger)
}

// serveHoldInstance claims the instance ID on this host for the life of
// the process and runs the start sweep only when no other live process of
// the instance holds it (SESSION-4): a sibling started while this one
// serves (an MCP client's probe process) never destroys its sandboxes.
func serveHoldInstance(ctx context.Context, srv *server.Server, sweep bool, logger *slog.Logger) (release func()) {
	hold, err := holdInstance(instanceLockDir(), srv.Instance())
	if err != nil {
		hold, err = holdInstance(filepath.Join(os.TempDir(), "sandboxkit-instances"), srv.Instance())
	}
	if err != nil {
		logger.Warn("instance lock unavailable: start sweep skipped", "instance", srv.Instance(), "error", err.Error())
		serveSweepAtStart(ctx, srv, false, logger)
		return func() {}
	}
	if sweep && !hold.sweepAllowed() {
		logger.Info("another live process of this instance runs on this host: start sweep skipped", "instance", srv.Instance())
	}
	serveSweepAtStart(ctx, srv, sweep && hold.sweepAllowed(), logger)
	if err := hold.share(); err != nil {
		logger.Warn("instance lock could not be shared", "instance", srv.Instance(), "error", err.Error())
	}
	return hold.release
}

// serveHoldAnonymous claims this process's random instance ID on this
// host, and sweeps, before the server serves, the anonymous instances
// whose process died (kill -9, an OOM kill) and left sandboxes: their lock
// file stays, and no live process holds it. The lock is the liveness
// proof: a live process's sandboxes are never swept. When the process
// ends with nothing unresolved, its lock file is removed.
func serveHoldAnonymous(ctx context.Context, srv *server.Server, p *sandbox.Platform, sweep bool, logger *slog.Logger) (release func()) {
	dir := instanceLockDir()
	hold, err := holdAnonymous(dir, srv.Instance())
	if err != nil {
		logger.Info("server instance", "instance", srv.Instance(), "sweep_at_start", false)
		return func() {}
	}
	if sweep {
		serveSweepDeadAnonymous(ctx, p, dir, srv.Instance(), logger)
	} else {
		logger.Info("server instance", "instance", srv.Instance(), "sweep_at_start", false)
	}
	return func() {
		if srv.UnresolvedCount() > 0 {
			hold.release() // the next start sweeps what is left
			return
		}
		hold.forget()
	}
}

// serveSweepDeadAnonymous sweeps every dead anonymous instance on this
// host: one list per provider region, one destroy per sandbox found.
func serveSweepDeadAnonymous(ctx context.Context, p *sandbox.Platform, dir, self string, logger *slog.Logger) {
	dead := deadAnonymous(dir, self)
	logger.Info("server instance", "instance", self, "sweep_at_start", true, "dead_instances", len(dead))
	// A provider that is down must not hold the start up for long: what is
	// not swept now keeps its lock file for the next start.
	ctx, cancel := context.WithTimeout(ctx, server.DefaultDestroyTimeout)
	defer cancel()
	for _, d := range dead {
		rep, err := server.SweepOrphans(ctx, p, d.id, &server.SweepOptions{Logger: logger})
		if err != nil {
			logger.Error("sweep of a dead instance incomplete: the next start tries again", "instance", d.id, "error", err.Error())
		}
		if rep != nil {
			logger.Info("dead instance swept", "instance", d.id, "found", len(rep.Found), "destroyed", len(rep.Destroyed),
				"duration", rep.Duration.Round(time.Millisecond))
		}
		d.done(err == nil)
	}
}

// serveSweepAtStart destroys, before the server serves, what an earlier
// life of its instance left (a kill -9, a lost node): every sandbox tagged
// with the instance ID. A sweep that cannot finish is logged and the server
// serves anyway; the sandboxes it names stay to be swept by hand
// ("sandboxkit sweep --orphans --instance ID").
func serveSweepAtStart(ctx context.Context, srv *server.Server, sweep bool, logger *slog.Logger) {
	if !sweep {
		logger.Info("server instance", "instance", srv.Instance(), "sweep_at_start", false)
		return
	}
	rep, err := srv.SweepPrevious(ctx)
	if err != nil {
		logger.Error("start sweep incomplete: sandboxes of this instance's previous life may be left", "instance", srv.Instance(), "error", err.Error())
	}
	if rep != nil {
		logger.Info("start sweep done", "instance", srv.Instance(), "found", len(rep.Found), "destroyed", len(rep.Destroyed),
			"already_gone", len(rep.AlreadyGone), "failed", len(rep.Failed), "duration", rep.Duration.Round(time.Millisecond))
	}
}

// serveRealPlatform builds the platform from the environment and the optional
// config file, and refuses to start without any credential.
func serveRealPlatform(configPath string, getenv func(string) string, requestTimeout time.Duration) (*sandbox.Platform, error) {
	var pc *sandbox.Config
	if configPath != "" {
		c, err := sandbox.LoadConfig(configPath)
		if err != nil {
			return nil, err
		}
		pc = c
	}
	p, err := sandbox.NewPlatform(&sandbox.Options{Config: pc, Getenv: getenv, UserAgent: "sandboxkit/" + serveVersion(), RequestTimeout: requestTimeout})
	if err != nil {
		return nil, err
	}
	for _, id := range p.Providers() {
		if p.HasCredentials(id) {
			return p, nil
		}
	}
	var names []string
	for _, id := range p.Providers() {
		if c, ok := p.Provider(id); ok {
			names = append(names, c.APIKeyEnv)
		}
	}
	return nil, fmt.Errorf("no provider credentials: set %s (the E2B API key)%s, pass --config with providers whose api_key_env is set, or run with --fake for the in-memory fake provider",
		sandbox.EnvAPIKey, serveOtherKeys(names))
}

func serveOtherKeys(names []string) string {
	var others []string
	for _, n := range names {
		if n != sandbox.EnvAPIKey {
			others = append(others, n)
		}
	}
	if len(others) == 0 {
		return ""
	}
	return " or one of " + strings.Join(others, ", ")
}

// serveStreamableHTTP serves Streamable HTTP until ctx is cancelled, then shuts the
// MCP server down (destroying owned sandboxes) and the HTTP server.
func serveStreamableHTTP(ctx context.Context, srv *server.Server, cfg serveConfig, token string, tokens map[string]string, oauth *server.OAuth, logger *slog.Logger) error {
	opts := serveHTTPOptions(cfg, token, tokens)
	opts.OAuth = oauth
	hs := srv.HTTPServer(opts)
	hs.ErrorLog = slog.NewLogLogger(logger.Handler(), slog.LevelWarn)
	ln, err := net.Listen("tcp", cfg.httpAddr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.httpAddr, err)
	}
	logger.Info("serving MCP over Streamable HTTP", "addr", ln.Addr().String(), "path", server.MCPPath, "auth", token != "" || len(tokens) > 0 || oauth != nil, "principals", len(tokens), "oauth", oauth != nil)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()

	select {
	case err = <-served:
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.shutdownWait)
	defer cancel()
	serr := srv.Shutdown(sctx)
	if serr != nil {
		logger.Warn("MCP shutdown incomplete", "error", serr.Error())
	}
	if herr := hs.Shutdown(sctx); herr != nil {
		_ = hs.Close()
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	// Sandboxes that could not be destroyed make the exit status 1.
	return serr
}

func serveLogLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("--log-level %q: want debug, info, warn or error", s)
	}
	return l, nil
}

// serveVersion is the server version reported to clients in initialize.
func serveVersion() string { return buildVersion() }
