// Package fakeprovider is an in-memory, E2B-compatible sandbox platform for
// tests of the sandbox SDK and of MCP servers built on E2B-style providers.
//
// A [Provider] serves the control-plane routes of the route table in package
// sandbox (list v2, create, get, kill, set-timeout, connect) with E2B's paths,
// status codes, field names and error messages, and forwards requests
// addressed to a sandbox (host "49983-<id>.<domain>" or header
// E2b-Sandbox-Id) to that sandbox's [Daemon]. One Provider is one account:
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
//   - Edge-proxy answers for envd requests (unknown, expired, killed or
//     paused sandbox, closed port, no daemon) are 502 with the fake's own
//     messages in E2B's {code, message} shape. Only port 49983 is routed.
//   - The fake does not check envd access tokens: it hands the token to the
//     daemon ([DaemonConfig.AccessToken]), which enforces it.
//   - A Malformed or Oversize fault on a route whose success is 204 answers
//     200, since a 204 cannot carry a body.
package fakeprovider
