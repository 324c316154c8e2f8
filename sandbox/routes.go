package sandbox

// Route names: one table for the platform's endpoints.
//
// Each constant is written as an http.ServeMux pattern ("METHOD /path") and is
// used, unchanged, as the fake provider's mux pattern, as the operation name in
// its request journal and fault table, and as the operation named in an
// [Error]. Nothing outside this table is ever called (and this package calls
// only some of it: not the watch RPCs nor Process/Update).
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

// ControlPlaneOps lists every control-plane route, in a stable order.
func ControlPlaneOps() []string {
	return []string{OpListSandboxes, OpCreateSandbox, OpGetSandbox, OpKillSandbox, OpSetTimeout, OpConnectSandbox}
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
