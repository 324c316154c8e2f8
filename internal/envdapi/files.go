package envdapi

// Plain HTTP endpoints of the daemon.
const (
	// FilesPath serves GET (download raw bytes) and POST (upload, multipart
	// field "file" or application/octet-stream) with query "path" and "username".
	FilesPath = "/files"
	// HealthPath answers 204 while the daemon runs.
	HealthPath = "/health"
)

// Header names the daemon and its clients use.
const (
	AccessTokenHeader = "X-Access-Token"
	SandboxIDHeader   = "E2b-Sandbox-Id"
	SandboxPortHeader = "E2b-Sandbox-Port"
	KeepaliveHeader   = "Keepalive-Ping-Interval"
)

// HTTPError is the error body of the plain HTTP endpoints: {"code", "message"}.
type HTTPError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// MetadataHeaderPrefix starts the request headers that attach user metadata
// to an uploaded file: "X-Metadata-<key>: <value>" (keys are lowercased).
const MetadataHeaderPrefix = "X-Metadata-"

// UploadedEntry is one element of the JSON array POST /files answers with.
type UploadedEntry struct {
	Path     string            `json:"path"`
	Name     string            `json:"name"`
	Type     string            `json:"type"`
	Metadata map[string]string `json:"metadata,omitempty"`
}
