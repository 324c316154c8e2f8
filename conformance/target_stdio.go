package conformance

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxkit/sandboxkit/internal/syncbuf"
)

// stdioTarget starts the server command once per session (a stdio server
// serves exactly one session), with the fake hub's location in its
// environment (or, in cloud mode, the real environment).
type stdioTarget struct {
	cfg *Config
	// env is added to the command's environment before ServerEnv: the
	// fake's location, or nothing in cloud mode (the real environment
	// passes through).
	env []string
	// settle is the run's settle time: how long a server gets to destroy
	// its sandboxes against a real provider.
	settle time.Duration
	log    syncbuf.Buffer

	mu      sync.Mutex
	started []*stdioTransport // the processes started since the spec began
}

func (t *stdioTarget) start(ctx context.Context) error {
	if _, err := exec.LookPath(t.cfg.ServerCommand[0]); err != nil {
		return fmt.Errorf("conformance: server command: %w", err)
	}
	return nil
}

func (t *stdioTarget) command() *exec.Cmd {
	cmd := exec.Command(t.cfg.ServerCommand[0], t.cfg.ServerCommand[1:]...)
	cmd.Env = append(append(serverBaseEnv(), t.env...), t.cfg.ServerEnv...)
	cmd.Stderr = &t.log
	return cmd
}

func (t *stdioTarget) connect(ctx context.Context, version string) (*clientConn, error) {
	cs, _, tr, err := t.startSession(ctx, version)
	if err != nil {
		return nil, err
	}
	// The transport's Close waits for the process to exit, and a stdio
	// server finishes its cleanup before it exits: closing is the end.
	return &clientConn{cs: cs, ending: tr.ended}, nil
}

// startSession starts the server command and opens its one session. A
// server that wrote a non-JSON line to stdout gets an error that quotes
// the line, not the JSON decoder's.
func (t *stdioTarget) startSession(ctx context.Context, version string) (*mcp.ClientSession, *exec.Cmd, *stdioTransport, error) {
	cmd := t.command()
	tr := t.newTransport(cmd)
	cs, err := newClient().Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		if cmd.Process != nil {
			_ = cmd.Process.Kill()
		}
		if line := tr.sniff.nonJSON(); line != "" {
			return nil, nil, nil, fmt.Errorf("conformance: start stdio server: %w", nonJSONError(line, err))
		}
		return nil, nil, nil, fmt.Errorf("conformance: start stdio server: %w", err)
	}
	return cs, cmd, tr, nil
}

// newTransport is the transport of a new server process, whose stdout the
// target watches for the spec under way.
func (t *stdioTarget) newTransport(cmd *exec.Cmd) *stdioTransport {
	tr := &stdioTransport{cmd: cmd, terminate: t.terminate(), sniff: newStdoutSniffer()}
	t.mu.Lock()
	t.started = append(t.started, tr)
	t.mu.Unlock()
	return tr
}

// beginSpec forgets the processes of earlier specs: a spec's diagnosis
// reads only the stdout of the processes started for it.
func (t *stdioTarget) beginSpec() {
	t.mu.Lock()
	t.started = nil
	t.mu.Unlock()
}

// nonJSON returns the first non-JSON line on stdout of a server process
// started since the spec began (a legacy session's, or one of a modern
// request's), or "".
func (t *stdioTarget) nonJSON() string {
	t.mu.Lock()
	started := slices.Clone(t.started)
	t.mu.Unlock()
	for _, tr := range started {
		if line := tr.sniff.nonJSON(); line != "" {
			return line
		}
	}
	return ""
}

// connectShutdown starts the server command for one session and returns the
// function that shuts it down as an orchestrator does: SIGTERM, then the
// end of its input, and the wait for it to exit (killed after the
// terminate duration).
func (t *stdioTarget) connectShutdown(ctx context.Context, version string) (*clientConn, func(context.Context) error, error) {
	cs, cmd, _, err := t.startSession(ctx, version)
	if err != nil {
		return nil, nil, err
	}
	shutdown := func(context.Context) error {
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			return fmt.Errorf("signal the server: %w", err)
		}
		_ = cs.Close() // the exit status may say that a destroy failed
		return nil
	}
	return &clientConn{cs: cs}, shutdown, nil
}

// terminate is how long the server gets to destroy its sandboxes after
// its input ends before it is signalled: longer against a real provider.
func (t *stdioTarget) terminate() time.Duration {
	if t.cfg.Cloud {
		return t.settle
	}
	return 5 * time.Second
}

func (t *stdioTarget) logs() string { return t.log.String() }

func (t *stdioTarget) stop() {}
