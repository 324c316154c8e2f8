// Package fakeprovider is an in-memory, E2B-compatible sandbox platform for
// tests of the sandbox SDK and of MCP servers built on E2B-style providers.
//
// A [Provider] serves the control-plane routes of the route table in package
// sandbox with E2B's paths, status codes, field names and error messages:
// list (GET /v2/sandboxes, and the deprecated unpaged GET /sandboxes),
// create and connect on both route families (v2: POST /v2/sandboxes and POST
// /v2/sandboxes/{id}/connect, as e2b@2.51.0 for JS calls them; v1: POST
// /sandboxes and POST /sandboxes/{id}/connect, as the Python SDK 2.45
// does), get, kill, set-timeout, pause and metrics. It forwards requests
// addressed to a sandbox (host "49983-<id>.<domain>", header
// E2b-Sandbox-Id, or a /files URL signed with the sandbox's access token) to
// that sandbox's [Daemon]. One Provider is one account:
// create one per test, there is no global state.
//
// The two families differ as the platform's schemas do. A v2 create
// (NewSandboxV2) has no "secure" field: every sandbox is secured, so the
// answer carries an envdAccessToken that the daemon enforces, and an omitted
// "timeout" means 300 s. A v1 create (NewSandbox) defaults to 15 s and gives
// a token only with "secure": true. A v2 connect's body is optional
// ("timeout" defaults to 300 s); v1 requires "timeout". A request on either
// route is the same operation ([sandbox.OpCreateSandbox],
// [sandbox.OpConnectSandbox]) in the journal and the fault table;
// [Entry.Path] tells them apart. [Options.Routes] refuses one family.
//
// Reach it in-process with [Provider.HTTPClient] or [Provider.RoundTripper]
// (streaming, no socket), through an httpmock transport with
// [Provider.Register], or over loopback with [Provider.Start] or
// [Provider.Listen]:
//
//	clock := fakeprovider.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
//	p := fakeprovider.New(&fakeprovider.Options{Clock: clock})
//	srv := p.Start(t) // E2B_API_URL=srv.URL(), E2B_API_KEY=p.APIKey()
//	id := p.AddSandbox(fakeprovider.SandboxSeed{Metadata: map[string]string{"k": "v"}})
//	clock.Advance(10 * time.Minute) // id has expired: 404 from now on
//	n := p.Journal().Count(sandbox.OpGetSandbox)
//
// Tests inspect it with [Provider.Journal] (every request, control plane and
// envd), [Provider.Sandbox] and [Provider.LiveSandboxes]; steer it with
// [Provider.AddSandbox], [Provider.SetState], a [FakeClock] and
// [Provider.InjectFault]; and detect leaks with [Provider.Canaries]. By
// default the fake is faithful: metadata and environment come back exactly
// as sent, error messages are the platform's, clientID is the platform's
// constant and domain is null; only the values the platform itself makes
// secret (the API key, envdAccessToken, trafficAccessToken) carry a
// distinct "canary-<kind>-<hex>" string. [Options.Canaries] (the
// conformance kit sets it) adds the detectors a client can see: a
// [CanaryMetadataKey] metadata entry, a [CanaryEnvVar] environment variable,
// a canary clientID and domain, and a canary reference with a request URL
// at the end of every error message.
//
// # Where the fake knowingly differs from E2B
//
//   - Snapshots (POST /sandboxes/{id}/snapshots, GET /snapshots, DELETE
//     /templates/{id}), fork (POST /sandboxes/{id}/fork), network update
//     (PUT /sandboxes/{id}/network), the deprecated resume and refreshes,
//     logs and GET /sandboxes/metrics answer 501 "This operation is not
//     supported by the sandboxkit fake provider" in E2B's error shape, never
//     404: e2b@2.51.0 turns a 404 on them into SandboxNotFoundError (or, for
//     deleteSnapshot, false), which would report a live sandbox as gone.
//     Templates, volumes, secrets, teams and every other path answer 404.
//   - One account, one API key, header X-API-Key only; the Bearer access
//     token and team schemes are not supported. No rate limiting (inject a
//     429 [Fault] instead); the fake's own 429 (the concurrency limit)
//     carries Retry-After: 1. An injected 429 carries what the fault says.
//   - Schema violations answer 400 with messages modelled on E2B's OpenAPI
//     validator ("validation error: error in openapi3filter.RequestError:
//     ..."), not byte-identical ones; bad JSON answers "Error when parsing
//     request: <encoding/json's error>".
//   - E2B ignores unknown body fields. The fake rejects "cpuCount" and
//     "memoryMB" on create with 400 unless [Options.AcceptResources] is set,
//     in which case it applies them (an E2B-compatible extension).
//   - autoPause, autoPauseMemory, autoResume, network, volumeMounts, mcp,
//     iam and allow_internet_access are accepted and kept; get reports
//     lifecycle {autoResume, onTimeout} always, network and volumeMounts
//     when set, allowInternetAccess as sent. They are checked for shape
//     only (network, mcp and iam must be objects, a volume mount needs name
//     and path, autoResume needs enabled), not against the platform's full
//     rules (CIDRs, domains, volumes that exist, autoResume requiring
//     autoPause); network has no effect, volumes are not mounted and no MCP
//     gateway runs. At endAt a sandbox created with autoPause is paused
//     (its endAt stays the pause time), any other is killed.
//   - Pause's and connect's "memory": false (a filesystem-only snapshot,
//     a reboot on resume) is accepted and ignored: the daemon and its
//     processes always survive pause and resume.
//   - Metrics are made up: one sample every 5 s from startedAt to now (to
//     the pause time for a paused sandbox), at most the last 100, with the
//     template's cpuCount, memTotal and diskTotal and nothing in use.
//   - The deprecated GET /sandboxes lists running sandboxes only, filtered
//     by metadata, unpaged, oldest first.
//   - Expiry is evaluated lazily, at each request and each inspection: with
//     the real clock an expired sandbox's daemon is closed at the next call,
//     not exactly at endAt. Paused sandboxes never expire.
//   - Transient states (pausing, killing, snapshotting) only change when a
//     test calls [Provider.SetState]; pause itself is instantaneous. Connect
//     answers 409 in all of them, where E2B answers 409 only while killing
//     and otherwise waits for the transition to end.
//   - Resuming a paused sandbox (connect) restarts its clock: startedAt
//     becomes now. Its daemon is kept across pause and resume.
//   - The concurrency limit counts every sandbox that is not paused.
//     X-Total-Running counts every running sandbox of the account,
//     regardless of the other filters.
//   - domain is null and clientID the constant [ClientID] for every
//     sandbox (E2B reports a domain only on custom clusters). Access tokens
//     are "canary-<kind>-<hex>" strings, not E2B's formats. With
//     [Options.Canaries]: clientID is a per-sandbox canary, domain is
//     "canary-domain-<hex>.sandboxkit.test", metadata and envVars carry one
//     extra canary entry ([CanaryMetadataKey], [CanaryEnvVar]), and every
//     error message ends with " (request
//     https://api.canary-err-<hex>.sandboxkit.test<path> ref
//     canary-err-<hex>)".
//   - startedAfter matches startedAt at or after the bound, both truncated
//     to microseconds, as E2B's database compares them.
//   - Messages of pause's 409 and of the 501s, and the validator details of
//     the fields kept as they came, are modelled on E2B's, not copied from
//     a running platform.
//   - The fake does not check envd access tokens: it hands the token to the
//     daemon ([DaemonConfig.AccessToken]), which enforces it.
//   - The v2 create and connect routes are known only from e2b@2.51.0's
//     bundled OpenAPI types (index.d.ts:1603-1760, :2219, :2389); no public
//     snapshot of the platform's own spec has them yet.
//   - A Malformed or Oversize fault on a route whose success is 204 answers
//     200, since a 204 cannot carry a body.
//
// # Where the fake knowingly differs: data plane (envd and its edge)
//
// The daemon reports envd 0.6.13 (the current release), so the SDKs take
// today's code paths (closeStdin, octet-stream uploads, file metadata,
// watch entries). What still differs, and why it stays:
//
//   - Edge answers follow the platform's proxy (502 {sandboxId, message,
//     code}, plus port for a closed port); with [Options.Canaries] the
//     message carries the error canary suffix like every other message of
//     the fake. A paused
//     sandbox gets "The sandbox was not found" (the fake never auto-resumes
//     on traffic); a sandbox without a daemon gets "port is not open"; a
//     browser User-Agent gets JSON, not the platform's HTML page. Ports
//     49983 (envd) and 49999 (the code interpreter, in-process, on every
//     sandbox whatever its template: codeinterp.go) are routed.
//   - A killed or expired sandbox drops its open streams (process Start and
//     Connect, WatchDir) by closing the HTTP/1.1 connection; the platform
//     resets an HTTP/2 stream. Both read as a cut body ("terminated" in
//     Node), and the SDK then probes /health (502) as it does on E2B.
//   - On the shared URL (E2B_SANDBOX_URL, no sandbox header or host), only
//     signed /files requests can be routed, by finding the sandbox whose
//     access token yields the signature; an unsigned one (a sandbox created
//     without secure) cannot name its sandbox and gets the control plane's
//     404.
//   - Watch events come from the in-memory tree, modelled on inotify
//     (create, write per write call, remove, rename-from + create-to, chmod
//     for chmod/chown/utimes/metadata); the kernel may coalesce repeated
//     events, the fake never does. A watch holds 4096 pending events, then
//     ends with fsnotify's overflow error. Removing the watched directory
//     itself sends nothing; allowNetworkMounts is accepted and ignored (the
//     tree has no network mounts).
//   - File metadata lives on the in-memory node (kept by rename, replaced
//     by each upload). A symlink's entry shows the link's metadata (none),
//     where envd reads the target's xattrs.
//   - A PTY is the fake's interactive shell on a small line discipline
//     (echo, backspace, ^C, ^D, CRLF output, prompt "user@e2b:<dir>$ "):
//     no raw mode, escape sequences or job control, and commands run from
//     it read an empty stdin. Resize only updates COLUMNS and LINES.
//   - Process/StreamInput (not called by the SDKs) is not served.
package fakeprovider
