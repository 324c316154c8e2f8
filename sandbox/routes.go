package sandbox

// Route names: one table for the platform's endpoints.
//
// Each Op constant is written as an http.ServeMux pattern ("METHOD /path") and
// is used, unchanged, as the fake provider's mux pattern, as the operation name
// in its request journal and fault table, and as the operation named in an
// [Error]. Create and connect have a second route, the v2 family the current
// JS SDK calls (Route* constants below): a request on either route is the same
// operation, journalled and fault-matched under the Op name. Nothing outside
// this table is ever called (and this package calls only some of it: not the
// watch RPCs nor Process/Update).
const (
	// OpListSandboxes lists sandboxes page by page (cursor in X-Next-Token).
	OpListSandboxes = "GET /v2/sandboxes"
	// OpCreateSandbox creates a sandbox; 201 with a Sandbox body.
	OpCreateSandbox = "POST /sandboxes"
	// OpGetSandbox reads one sandbox's details.
	OpGetSandbox = "GET /sandboxes/{sandboxID}"
	// OpKillSandbox destroys a sandbox; 204.
	OpKillSandbox = "DELETE /sandboxes/{sandboxID}"
	// OpSetTimeout sets a sandbox's remaining lifetime; 204.
	OpSetTimeout = "POST /sandboxes/{sandboxID}/timeout"
	// OpConnectSandbox connects to (and resumes) a sandbox; 200 or 201 with a Sandbox body.
	OpConnectSandbox = "POST /sandboxes/{sandboxID}/connect"
	// OpPauseSandbox pauses a running sandbox; 204, 409 when it is not running.
	// The SDK does not call it; the fake serves it for the official SDKs.
	OpPauseSandbox = "POST /sandboxes/{sandboxID}/pause"
	// OpSandboxMetrics lists a sandbox's resource samples; 200 with a list.
	// The SDK does not call it; the fake serves it for the official SDKs.
	OpSandboxMetrics = "GET /sandboxes/{sandboxID}/metrics"
	// OpListSandboxesV1 is the deprecated unpaged list of running sandboxes
	// (E2B SDKs before 1.x's paginator). The SDK does not call it; the fake
	// serves it.
	OpListSandboxesV1 = "GET /sandboxes"
)

// The v2 routes of create and connect: same operations as [OpCreateSandbox]
// and [OpConnectSandbox], with v2 semantics. A v2 create has no "secure"
// field (every sandbox is secured: the answer carries an envdAccessToken) and
// defaults "timeout" to 300 s; a v2 connect's body is optional and its
// "timeout" defaults to 300 s. e2b@2.51.0 (JS) calls these; the Python SDK
// 2.45 calls the v1 routes.
const (
	RouteCreateSandboxV2  = "POST /v2/sandboxes"
	RouteConnectSandboxV2 = "POST /v2/sandboxes/{sandboxID}/connect"
)

// In-sandbox daemon (envd) routes. Connect RPCs are POSTs to
// "/<package>.<Service>/<Method>"; files move through /files.
const (
	OpProcessStart      = "POST /process.Process/Start"
	OpProcessConnect    = "POST /process.Process/Connect"
	OpProcessList       = "POST /process.Process/List"
	OpProcessSendInput  = "POST /process.Process/SendInput"
	OpProcessSendSignal = "POST /process.Process/SendSignal"
	OpProcessCloseStdin = "POST /process.Process/CloseStdin"

	OpFilesystemStat    = "POST /filesystem.Filesystem/Stat"
	OpFilesystemListDir = "POST /filesystem.Filesystem/ListDir"
	OpFilesystemMakeDir = "POST /filesystem.Filesystem/MakeDir"
	OpFilesystemRemove  = "POST /filesystem.Filesystem/Remove"
	OpFilesystemMove    = "POST /filesystem.Filesystem/Move"

	// Watch RPCs and PTY resize: served by the fake's daemon for the
	// official SDKs; this package does not call them.
	OpFilesystemWatchDir         = "POST /filesystem.Filesystem/WatchDir"
	OpFilesystemCreateWatcher    = "POST /filesystem.Filesystem/CreateWatcher"
	OpFilesystemGetWatcherEvents = "POST /filesystem.Filesystem/GetWatcherEvents"
	OpFilesystemRemoveWatcher    = "POST /filesystem.Filesystem/RemoveWatcher"
	OpProcessUpdate              = "POST /process.Process/Update"

	OpFilesDownload = "GET /files"
	OpFilesUpload   = "POST /files"
	OpEnvdHealth    = "GET /health"
)

// ControlPlaneOps lists every control-plane operation, in a stable order.
func ControlPlaneOps() []string {
	return []string{OpListSandboxes, OpCreateSandbox, OpGetSandbox, OpKillSandbox, OpSetTimeout, OpConnectSandbox,
		OpPauseSandbox, OpSandboxMetrics, OpListSandboxesV1}
}

// EnvdOps lists every in-sandbox daemon route, in a stable order.
func EnvdOps() []string {
	return []string{
		OpProcessStart, OpProcessConnect, OpProcessList, OpProcessSendInput, OpProcessSendSignal, OpProcessCloseStdin,
		OpFilesystemStat, OpFilesystemListDir, OpFilesystemMakeDir, OpFilesystemRemove, OpFilesystemMove,
		OpFilesDownload, OpFilesUpload, OpEnvdHealth,
		OpFilesystemWatchDir, OpFilesystemCreateWatcher, OpFilesystemGetWatcherEvents, OpFilesystemRemoveWatcher,
		OpProcessUpdate,
	}
}

// EnvdPort is the port the in-sandbox daemon listens on; it is part of the
// daemon's host name ("49983-<sandboxID>.<domain>").
const EnvdPort = 49983
