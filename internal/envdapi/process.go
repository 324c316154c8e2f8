package envdapi

// Connect procedure paths of the process service.
const (
	ProcessStartProcedure      = "/process.Process/Start"
	ProcessConnectProcedure    = "/process.Process/Connect"
	ProcessListProcedure       = "/process.Process/List"
	ProcessSendInputProcedure  = "/process.Process/SendInput"
	ProcessSendSignalProcedure = "/process.Process/SendSignal"
	ProcessCloseStdinProcedure = "/process.Process/CloseStdin"
	ProcessUpdateProcedure     = "/process.Process/Update"
)

// PTYSize is a terminal size in character cells.
type PTYSize struct {
	Cols uint32 `json:"cols,omitempty"`
	Rows uint32 `json:"rows,omitempty"`
}

// PTY asks for a pseudo-terminal of a size.
type PTY struct {
	Size PTYSize `json:"size"`
}

// UpdateRequest changes a running process: today only its terminal size.
type UpdateRequest struct {
	Process ProcessSelector `json:"process"`
	Pty     *PTY            `json:"pty,omitempty"`
}

// UpdateResponse is empty.
type UpdateResponse struct{}

// ProcessConfig is the command a process runs.
type ProcessConfig struct {
	Cmd  string            `json:"cmd"`
	Args []string          `json:"args,omitempty"`
	Envs map[string]string `json:"envs,omitempty"`
	Cwd  *string           `json:"cwd,omitempty"`
}

// ProcessSelector picks a process by pid or by tag (a oneof: set one).
type ProcessSelector struct {
	Pid *uint32 `json:"pid,omitempty"`
	Tag *string `json:"tag,omitempty"`
}

// ProcessInfo describes a running process.
type ProcessInfo struct {
	Config ProcessConfig `json:"config"`
	Pid    uint32        `json:"pid,omitempty"`
	Tag    *string       `json:"tag,omitempty"`
}

// StartRequest starts a process.
type StartRequest struct {
	Process ProcessConfig `json:"process"`
	Tag     *string       `json:"tag,omitempty"`
	Stdin   *bool         `json:"stdin,omitempty"`
	Pty     *PTY          `json:"pty,omitempty"`
}

// StartResponse is one message of the Start stream.
type StartResponse struct {
	Event ProcessEvent `json:"event"`
}

// ConnectRequest attaches to a running process's event stream.
type ConnectRequest struct {
	Process ProcessSelector `json:"process"`
}

// ConnectResponse is one message of the Connect stream.
type ConnectResponse struct {
	Event ProcessEvent `json:"event"`
}

// ProcessEvent is a oneof: exactly one member is set.
type ProcessEvent struct {
	Start     *StartEvent `json:"start,omitempty"`
	Data      *DataEvent  `json:"data,omitempty"`
	End       *EndEvent   `json:"end,omitempty"`
	Keepalive *struct{}   `json:"keepalive,omitempty"`
}

// StartEvent reports the pid of a started process.
type StartEvent struct {
	Pid uint32 `json:"pid,omitempty"`
}

// DataEvent carries one chunk of output (a oneof: set one; bytes are base64 on the wire).
type DataEvent struct {
	Stdout []byte `json:"stdout,omitempty"`
	Stderr []byte `json:"stderr,omitempty"`
	Pty    []byte `json:"pty,omitempty"`
}

// EndEvent reports how a process ended. An absent exitCode means 0.
type EndEvent struct {
	ExitCode int32   `json:"exitCode,omitempty"`
	Exited   bool    `json:"exited,omitempty"`
	Status   string  `json:"status,omitempty"`
	Error    *string `json:"error,omitempty"`
}

// ListRequest lists running processes.
type ListRequest struct{}

// ListResponse holds the running processes.
type ListResponse struct {
	Processes []ProcessInfo `json:"processes,omitempty"`
}

// ProcessInput is a oneof: stdin or pty bytes.
type ProcessInput struct {
	Stdin []byte `json:"stdin,omitempty"`
	Pty   []byte `json:"pty,omitempty"`
}

// SendInputRequest writes to a process's stdin.
type SendInputRequest struct {
	Process ProcessSelector `json:"process"`
	Input   ProcessInput    `json:"input"`
}

// SendInputResponse is empty.
type SendInputResponse struct{}

// SendSignalRequest signals a process.
type SendSignalRequest struct {
	Process ProcessSelector `json:"process"`
	Signal  Signal          `json:"signal,omitempty"`
}

// SendSignalResponse is empty.
type SendSignalResponse struct{}

// CloseStdinRequest closes a process's stdin.
type CloseStdinRequest struct {
	Process ProcessSelector `json:"process"`
}

// CloseStdinResponse is empty.
type CloseStdinResponse struct{}
