// Package fakeprovider is an in-memory, E2B-compatible sandbox platform for
// tests of the sandbox SDK and of MCP servers built on E2B-style providers.
//
// A [Provider] serves the control-plane routes of the route table in package
// sandbox with E2B's paths, status codes, field names and error messages:
// list (GET /v2/sandboxes, and the deprecated unpaged GET /sandboxes),
// create and connect on both route families (v2: POST /v2/sandboxes and POST
// /v2/sandboxes/{id}/connect, as e2b@2.51.0 for JS calls them; v1: POST
// /sandboxes and POST /sandboxes/{id}/connect, as the Python SDK 2.45
// does), get, kill, set-timeout, pause and metrics; and, outside that
// table, fork, snapshots (create, list, delete, create from), network
// update and the template alias lookup ([RouteForkSandbox],
// [RouteCreateSnapshot], [RouteListSnapshots], [RouteDeleteTemplate],
// [RouteUpdateNetwork], [RouteTemplateAlias]). It forwards requests
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
// e2b 1.x reads neither E2B_API_URL nor E2B_SANDBOX_URL. [ReachE2B1] gives
// it two ways in: [ListenDebug] serves the fake where 1.x looks with
// E2B_DEBUG=true (API on localhost:3000, sandbox ports 49983 and 49999,
// routed by elimination because debug mode names no sandbox), and
// [NodeFetchPreload] redirects a Node process's fetch. Legacy
// "<sandboxID>-<clientID>" IDs name their sandbox everywhere
// ([CanonicalSandboxID], [SameSandbox]).
//
// # Where the fake knowingly differs from E2B
//
//   - Fork and snapshots copy a sandbox's files (with its template,
//     resources and environment; a fork also inherits metadata, network,
//     allowInternetAccess, autoPause, autoResume, volume mounts and
//     secure, as infra's buildResumeSandboxDataFromSnapshot does), not its
//     memory:
//     running processes and open watches of the source are not in the
//     copy, where the platform resumes them from the memory snapshot. A
//     daemon other than [InMemoryDaemon] is not copied at all. Snapshot
//     names live in the namespace [TeamSlug] with the one tag "default";
//     another tag is refused (400). A sandbox created from a snapshot
//     reports the snapshot's template ID. Forks of a paused sandbox answer
//     409, as while it changes state.
//   - Network updates are stored and reported by get (egress rules
//     replaced as a whole, as the platform does), never applied: the fake
//     has no network. egressProxy is ignored.
//   - The deprecated resume, refreshes, logs and GET /sandboxes/metrics
//     (called by neither SDK's sandbox methods) are served simply: resume
//     as connect resumes (409 when running), refreshes extend endAt to at
//     least now + max(duration, 15 s), logs are always empty (the fake's
//     sandboxes write no platform logs), and the metrics are each running
//     sandbox's latest made-up sample.
//     Of the template routes only the alias lookup (GET
//     /templates/aliases/{alias}) is served, as the platform answers it:
//     403 for another team's public template (the default "base" and
//     "code-interpreter-v1"), 404 for an unknown name, 200 for a
//     [Template] marked Owned; names with a namespace ("team/name") are
//     looked up whole, so they are not found. Template builds, volumes,
//     secrets, teams and every other path answer 404.
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
//   - Pause's "memory": false (a filesystem-only snapshot) makes the next
//     resume reboot the daemon ([Rebooter]): its processes are killed, its
//     watches end, its files stay and /proc/sys/kernel/random/boot_id
//     changes; a pause with memory keeps all of them. Processes are not
//     frozen while paused: they go on running in the fake. The v2
//     connect's "memory" is accepted and ignored.
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
//   - Messages of pause's 409, and the validator details of
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
//     no raw mode, escape sequences or terminal job control (^Z, fg, bg),
//     and commands run from it read an empty stdin. Resize only updates
//     COLUMNS and LINES.
//   - Permissions: commands run as their user (root, or user with uid
//     and gid 1000) and meet the kernel's checks on every path: search on
//     each directory, read or write on files, write on the directory whose
//     entries change, the sticky bit of /tmp, ownership for chmod, chown
//     and utimes; a denied shell operation fails with EACCES ("Permission
//     denied", exit 1 or 2 as the command gives it). /files and the
//     filesystem RPCs are not limited by the user's bits, as envd, which
//     runs as root, is not; they chown what they create to the user. No
//     supplementary groups, ACLs or capabilities. A failed output
//     redirection reads "bash: PATH: Permission denied" (bash 5.1 adds
//     "line N:"); a failed input redirection still reads Go's "open PATH:
//     permission denied".
//   - Background jobs of a command (cmd &) get PIDs from the daemon's PID
//     sequence; $!, kill (PIDs, %N, -9/-KILL/-s TERM, -0), wait (PIDs, %N,
//     -n) and jobs (-l, -p) work as in a non-interactive bash, and a
//     signalled job exits 128 + the signal (137, 143). What differs: a job
//     runs in a fresh interpreter with the script's variables and
//     function definitions replayed, not a fork (functions made by eval or
//     source are missing); bash's "Killed" notice on stderr is not
//     printed; jobs are not in Process/List (as in envd, which lists only
//     the processes it started), and no ps command lists them. kill also
//     reaches the processes envd started, by their PID. A PTY shell has the
//     same job control across its lines.
//   - Process/StreamInput (not called by the SDKs) is not served.
//
// # Backends: where a sandbox's files and processes live
//
// The list above describes the default, in-memory daemon ([InMemoryDaemon]):
// no host process, deterministic, any OS, and what the conformance kit
// uses unless told otherwise. [NamespaceDaemon] (Linux, as root; sandboxkit
// fake-provider --exec namespace, conform --exec namespace) makes each
// sandbox real instead: this program re-run in new mount, pid, uts, ipc and
// net namespaces over an overlay of a root filesystem. Per backend:
//
//   - Commands. Memory: the built-in shell and commands listed above.
//     Namespace: /bin/sh -c per command as envd runs it, with the user's
//     uid and gid; every binary of the root filesystem (python3, pip, git,
//     curl), nothing it lacks (sudo on a host without it). PIDs are the
//     sandbox's own (small numbers); in memory they count from 1000.
//   - Files. Memory: the tree above, with its 256 MiB quota. Namespace:
//     the overlay's writable layer over the root filesystem (default /,
//     without the host's other mounts), with tmpfs over /tmp, /root, /home
//     and /run; metadata are real user.e2b.* xattrs; no quota but the
//     host disk's.
//   - Watches. Memory: WatchDir and the polled watchers see the tree's
//     changes. Namespace: the same RPCs over inotify (fsnotify, as envd),
//     so the kernel decides which events a change makes.
//   - Output. Memory: stdout and stderr are written in program order.
//     Namespace: two pipes, read apart, as envd's; their relative order is
//     not kept.
//   - Fork, snapshots and pause without memory. Memory: files are copied,
//     a cold boot changes boot_id. Namespace: the daemon has no image, so a
//     fork or snapshot starts from the root filesystem, and resume keeps
//     processes running.
//   - Code interpreter (port 49999). The same /execute stream and context
//     routes in both (internal/fakecodeinterp). Memory: the in-process
//     Starlark-dialect Python, goja JavaScript and the built-in shell.
//     Namespace: the sandbox serves it on its own loopback port 49999, as
//     E2B's code-interpreter template does; each python or javascript
//     context is one long-lived real python3 or node process of the
//     default user, started at the context's first execution (Jupyter
//     starts it with the context), and bash runs `bash -c` per execution.
//     Python results carry text/plain (repr of the last expression, a
//     str without its quotes as the server gives it) and the IPython
//     _repr_html_/_markdown_/_svg_/_png_/_jpeg_/_json_ forms;
//     display() and open matplotlib figures (png) are results too; where
//     IPython is not installed, a stand-in IPython.display offers
//     display, Image, HTML, Markdown, SVG and JSON. Output a child
//     process writes (os.system) is the cell's stdout, which Jupyter
//     would not show. JavaScript results are util.inspect text; a cell
//     is a script in node's global context, so var and function
//     declarations persist but a top-level let or const cannot be
//     declared twice, and top-level await is a SyntaxError. A kernel
//     process that dies ends its cell with DeadKernelError (the next
//     execution starts a fresh one); a timeout interrupts it with SIGINT
//     (KeyboardInterrupt; an error of the cell in node). Only the
//     default user runs kernels, and the server is visible to the
//     sandbox's own processes at 127.0.0.1:49999.
//   - Network. Both: loopback only. Namespace: a request for any other
//     port of a sandbox (host "<port>-<id>.<domain>" as the SDKs' getHost
//     names it, or header E2b-Sandbox-Port) reaches whatever listens on
//     that port of the sandbox's loopback (127.0.0.1, else ::1), streamed,
//     WebSocket upgrades included; when nothing listens, the edge's 502
//     "The sandbox is running but port is not open" with the port. The
//     sandbox's first process dials the port inside the sandbox's network
//     namespace and passes the connection back ([PortDialer]). Memory:
//     ports other than envd's and the code interpreter's get that 502.
//   - Start. Memory: microseconds. Namespace: two process starts and a
//     dozen mounts, from tens of milliseconds idle to seconds on a loaded
//     machine; conform --exec namespace gives its in-process reference
//     server a 10 s provider deadline instead of 2 s for that reason.
//   - Official SDK checks. compat/e2b and compat/python run in both
//     modes (compat/namespace_test.go as root). In namespace mode they
//     skip, naming the difference above: fork and snapshot copies and a
//     new boot_id after a pause without memory.
//   - Isolation. Namespace mode is for trusted code only: sandboxes share
//     the host's kernel and uids; root in a sandbox keeps a container
//     runtime's default capabilities (no CAP_SYS_ADMIN), /dev is minimal.
package fakeprovider
