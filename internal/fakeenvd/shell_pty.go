package fakeenvd

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"

	"github.com/sandboxkit/sandboxkit/internal/envdapi"
)

// ptyState is the terminal of a process started with a PTY.
type ptyState struct {
	mu   sync.Mutex
	size envdapi.PTYSize
}

func (t *ptyState) resize(s envdapi.PTYSize) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.size = s
}

func (t *ptyState) get() envdapi.PTYSize {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.size
}

// crlfWriter translates "\n" to "\r\n", as a terminal's output processing
// (onlcr) does for everything a program writes to it.
type crlfWriter struct{ w io.Writer }

func (c crlfWriter) Write(p []byte) (int, error) {
	if _, err := c.w.Write(bytes.ReplaceAll(p, []byte("\n"), []byte("\r\n"))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// runInteractive is `bash -i` on a terminal: a prompt, then one command
// line at a time read from in through a small line discipline (echo,
// backspace, ^C discards the line, ^D on an empty line exits), run in one
// interpreter so that cd and variables persist. Before each line COLUMNS
// and LINES are set from size, as bash's checkwinsize does. Commands read
// an empty stdin: the fake has no raw mode. Jobs (cmd &) are the fake's,
// as in scripts, and are not waited for when the shell exits.
func (s *shell) runInteractive(ctx context.Context, inv *Invocation, in io.Reader, size func() envdapi.PTYSize) int {
	ctx, err := s.nestShell(ctx)
	if err != nil {
		fmt.Fprintf(inv.Stderr, "bash: %v\r\n", err)
		return 126
	}
	term := inv.Stdout
	cmdInv := *inv
	cmdInv.Stdin = strings.NewReader("")
	cmdInv.Stdout, cmdInv.Stderr = crlfWriter{term}, crlfWriter{term}
	r, err := s.newRunner(&cmdInv, script{name: "bash"})
	if err != nil {
		fmt.Fprintf(term, "bash: %v\r\n", err)
		return 2
	}
	ctx = withShellJobs(ctx, &shellJobs{changed: make(chan struct{})})
	prompt := func() {
		dir := r.Dir
		if dir == inv.Home {
			dir = "~"
		} else if strings.HasPrefix(dir, inv.Home+"/") {
			dir = "~" + strings.TrimPrefix(dir, inv.Home)
		}
		host, _, _ := strings.Cut(Hostname, ".") // bash's \h
		fmt.Fprintf(term, "%s@%s:%s$ ", inv.User, host, dir)
	}
	status := 0
	br := bufio.NewReader(in)
	var line []byte
	prompt()
	for ctx.Err() == nil {
		b, err := br.ReadByte()
		if err != nil {
			return status
		}
		switch b {
		case '\r', '\n':
			_, _ = io.WriteString(term, "\r\n")
			src := string(line)
			line = line[:0]
			if strings.TrimSpace(src) != "" {
				sz := size()
				// "(exit N)" keeps $? of the previous line.
				s.interactiveLine(ctx, r, &cmdInv, fmt.Sprintf("COLUMNS=%d LINES=%d; (exit %d)", sz.Cols, sz.Rows, status))
				status = s.interactiveLine(ctx, r, &cmdInv, src)
				if r.Exited() {
					return status
				}
			}
			prompt()
		case 0x7f, '\b':
			if len(line) > 0 {
				line = line[:len(line)-1]
				_, _ = io.WriteString(term, "\b \b")
			}
		case 0x03: // ^C
			line = line[:0]
			status = 130
			_, _ = io.WriteString(term, "^C\r\n")
			prompt()
		case 0x04: // ^D
			if len(line) == 0 {
				_, _ = io.WriteString(term, "exit\r\n")
				return status
			}
		default:
			line = append(line, b)
			_, _ = term.Write([]byte{b})
		}
	}
	return status
}

// interactiveLine runs one command line in r and returns its status.
func (s *shell) interactiveLine(ctx context.Context, r *interp.Runner, inv *Invocation, src string) int {
	file, err := syntax.NewParser().Parse(strings.NewReader(src), "bash")
	if err == nil {
		err = checkSyntax(file)
	}
	if err != nil {
		fmt.Fprintf(inv.Stderr, "bash: %v\n", err)
		return 2
	}
	if sj := shellJobsOf(ctx); sj != nil {
		sj.adopt(file)
	}
	err = r.Run(ctx, file)
	var es interp.ExitStatus
	switch {
	case err == nil:
		return 0
	case errors.As(err, &es):
		return int(es)
	case ctx.Err() != nil:
		return 1
	}
	fmt.Fprintf(inv.Stderr, "bash: %v\n", err)
	return 1
}
