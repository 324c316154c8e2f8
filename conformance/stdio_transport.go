package conformance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxkit/sandboxkit/conformance/internal/summary"
)

// How a stdio server's process ended when the kit closed its session, as
// the banner and the summary count them.
const (
	endedOnEOF     = summary.EndedOnEOF
	endedOnSIGTERM = summary.EndedOnSIGTERM
	endedKilled    = summary.EndedKilled
	endedEarly     = summary.EndedEarly
)

// stdioTransport starts a server command and speaks MCP over its stdin and
// stdout, as mcp.CommandTransport does, and also watches what the server
// writes there and how it ends. Hand-written over mcp.IOTransport because
// CommandTransport hides both: the kit must quote a non-JSON line the
// server wrote to stdout (which no MCP client can read) and say whether the
// server exited on EOF, needed SIGTERM or was killed. The close sequence is
// the MCP specification's for stdio, as CommandTransport's: close stdin,
// wait, SIGTERM, wait, SIGKILL.
type stdioTransport struct {
	cmd       *exec.Cmd
	terminate time.Duration
	sniff     *stdoutSniffer

	mu     sync.Mutex
	ending string
}

// Connect starts the command.
func (t *stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	stdout, in, err := t.start()
	if err != nil {
		return nil, err
	}
	return (&mcp.IOTransport{Reader: io.NopCloser(stdout), Writer: in}).Connect(ctx)
}

// start starts the command and returns its stdout (watched by the
// sniffer) and its stdin, whose Close runs the close sequence.
func (t *stdioTransport) start() (io.Reader, io.WriteCloser, error) {
	// The kit owns the read end of stdout, so that Wait (which the close
	// sequence needs early, to see the exit) never closes it under a read.
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	t.cmd.Stdout = pw
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		_ = pr.Close()
		_ = pw.Close()
		return nil, nil, err
	}
	err = t.cmd.Start()
	_ = pw.Close()
	if err != nil {
		_ = pr.Close()
		return nil, nil, err
	}
	done := make(chan struct{})
	go func() {
		_ = t.cmd.Wait()
		close(done)
		// A child of the server may hold stdout open: the process's end
		// is the end of the session.
		time.Sleep(100 * time.Millisecond)
		_ = pr.Close()
	}()
	t.sniff.r = pr
	return t.sniff, &closeSequence{WriteCloser: stdin, t: t, done: done}, nil
}

// ended returns how the process ended, or "" while the session is open.
func (t *stdioTransport) ended() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ending
}

// closeSequence closes the server's stdin and then waits for it to exit,
// escalating to SIGTERM and SIGKILL, and records which it took.
type closeSequence struct {
	io.WriteCloser
	t    *stdioTransport
	done chan struct{}
	once sync.Once
	err  error
}

func (c *closeSequence) Close() error {
	c.once.Do(func() { c.err = c.close() })
	return c.err
}

func (c *closeSequence) close() error {
	t := c.t
	select {
	case <-c.done:
		t.setEnding(endedEarly)
		_ = c.WriteCloser.Close()
		return nil
	default:
	}
	if err := c.WriteCloser.Close(); err != nil {
		return fmt.Errorf("close the server's stdin: %w", err)
	}
	wait := func() bool {
		select {
		case <-c.done:
			return true
		case <-time.After(t.terminate):
			return false
		}
	}
	if wait() {
		t.setEnding(endedOnEOF)
		return exitError(t.cmd)
	}
	if err := t.cmd.Process.Signal(syscall.SIGTERM); err == nil && wait() {
		t.setEnding(endedOnSIGTERM)
		return exitError(t.cmd)
	}
	if err := t.cmd.Process.Kill(); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill the server: %w", err)
	}
	<-c.done
	t.setEnding(endedKilled)
	return exitError(t.cmd)
}

func (t *stdioTransport) setEnding(s string) {
	t.mu.Lock()
	t.ending = s
	t.mu.Unlock()
}

// exitError is the process's exit as an error, nil for status 0.
func exitError(cmd *exec.Cmd) error {
	if st := cmd.ProcessState; st != nil && !st.Success() {
		return fmt.Errorf("the server %s", st.String())
	}
	return nil
}

// stdoutSniffer passes a stdio server's stdout through and keeps the
// first line that cannot be a JSON-RPC message: one that does not begin
// with '{' or '[' (MCP stdio: "The server MUST NOT write anything to its
// stdout that is not a valid MCP message"). It looks only at the start of
// each line, so long messages cost nothing.
type stdoutSniffer struct {
	r io.Reader

	mu        sync.Mutex
	lineStart bool
	capturing bool
	line      []byte
	bad       string // the first non-JSON line, "" if none
	closed    bool
}

func newStdoutSniffer() *stdoutSniffer {
	return &stdoutSniffer{lineStart: true}
}

// maxQuoted bounds the quoted line.
const maxQuoted = 160

func (s *stdoutSniffer) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	s.mu.Lock()
	for _, b := range p[:n] {
		switch {
		case b == '\n':
			if s.capturing && s.bad == "" {
				s.bad = strings.TrimSpace(string(s.line))
			}
			s.lineStart, s.capturing, s.line = true, false, nil
		case s.capturing:
			if len(s.line) < maxQuoted {
				s.line = append(s.line, b)
			}
		case s.lineStart && (b == ' ' || b == '\t' || b == '\r'):
		case s.lineStart:
			s.lineStart = false
			if b != '{' && b != '[' {
				s.capturing, s.line = true, []byte{b}
			}
		}
	}
	if err != nil && !s.closed {
		s.closed = true
		if s.capturing && s.bad == "" {
			s.bad = strings.TrimSpace(string(s.line))
		}
	}
	s.mu.Unlock()
	return n, err
}

// nonJSON returns the first non-JSON line the server wrote, or "".
func (s *stdoutSniffer) nonJSON() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bad == "" && s.capturing {
		return strings.TrimSpace(string(s.line))
	}
	return s.bad
}

// nonJSONText says that the server wrote a non-JSON line to stdout,
// quoting it, and what to do.
func nonJSONText(line string) string {
	if len(line) >= maxQuoted {
		line += "…"
	}
	return fmt.Sprintf("the server wrote a non-JSON line to stdout: `%s`. A stdio MCP server's stdout carries only JSON-RPC messages, "+
		"so no client can talk to it: write logs to stderr (console.error, not console.log)", line)
}

// nonJSONError is the run error for a server that wrote a non-JSON line
// to stdout, wrapping the decoder's error.
func nonJSONError(line string, err error) error {
	return fmt.Errorf("%s (%w)", nonJSONText(line), err)
}
