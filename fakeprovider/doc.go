// Package fakeprovider is an in-memory, E2B-compatible sandbox platform for
// tests of the sandbox SDK and of MCP servers built on E2B-style providers.
//
// A [Provider] serves the control-plane routes of the route table in package
// sandbox (list v2, create, get, kill, set-timeout, connect) with E2B's paths,
// status codes, field names and error messages, and forwards requests
// addressed to a sandbox (host "49983-<id>.<domain>", header
// E2b-Sandbox-Id, or a /files URL signed with the sandbox's access token) to
// that sandbox's [Daemon]. One Provider is one account:
// create one per test, there is no global state.
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
// [Provider.InjectFault]; and detect leaks with [Provider.Canaries]: every
// secret-bearing value the fake hands out (API key, envdAccessToken,
// trafficAccessToken, domain, clientID, a metadata entry, an environment
// variable, every error message) carries a distinct "canary-<kind>-<hex>"
// string.
//
// # Where the fake knowingly differs from E2B
//
//   - Only the routes of the route table exist. The legacy GET /sandboxes,
//     pause, resume, refreshes, metrics, templates and every other path
//     answer 404 (in E2B's error shape).
//   - One account, one API key, header X-API-Key only; the Bearer access
//     token and team schemes are not supported. No rate limiting (inject a
//     429 [Fault] instead).
//   - Schema violations answer 400 with messages modelled on E2B's OpenAPI
//     validator ("validation error: error in openapi3filter.RequestError:
//     ..."), not byte-identical ones; bad JSON answers "Error when parsing
//     request: <encoding/json's error>".
//   - E2B ignores unknown body fields. The fake rejects "cpuCount" and
//     "memoryMB" on create with 400 unless [Options.AcceptResources] is set,
//     in which case it applies them (an E2B-compatible extension).
//   - autoPause, autoResume, network, mcp and volumeMounts are accepted and
//     ignored: at endAt a sandbox is always killed, never paused.
//   - Expiry is evaluated lazily, at each request and each inspection: with
//     the real clock an expired sandbox's daemon is closed at the next call,
//     not exactly at endAt. Paused sandboxes never expire.
//   - Transient states (pausing, killing, snapshotting) only change when a
//     test calls [Provider.SetState]. Connect answers 409 in all of them,
//     where E2B answers 409 only while killing and otherwise waits for the
//     transition to end.
//   - Resuming a paused sandbox (connect) restarts its clock: startedAt
//     becomes now. Its daemon is kept across pause and resume.
//   - The concurrency limit counts every sandbox that is not paused.
//     X-Total-Running counts every running sandbox of the account,
//     regardless of the other filters.
//   - clientID is a per-sandbox canary everywhere (E2B sends a constant for
//     listed and paused rows); metadata and envVars carry one extra canary
//     entry ([CanaryMetadataKey], [CanaryEnvVar]); every error message ends
//     with " (request https://api.canary-err-<hex>.sandboxkit.test<path> ref
//     canary-err-<hex>)".
//   - The fake does not check envd access tokens: it hands the token to the
//     daemon ([DaemonConfig.AccessToken]), which enforces it.
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
//     code}, plus port for a closed port), but the message carries the
//     error canary suffix like every other message of the fake. A paused
//     sandbox gets "The sandbox was not found" (the fake never auto-resumes
//     on traffic); a sandbox without a daemon gets "port is not open"; a
//     browser User-Agent gets JSON, not the platform's HTML page. Only port
//     49983 is routed.
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
