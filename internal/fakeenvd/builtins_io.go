package fakeenvd

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// copyOut copies r to the invocation's stdout, stopping when ctx is done.
func copyOut(ctx context.Context, inv *Invocation, r io.Reader) (werr, rerr error) {
	buf := make([]byte, 32<<10)
	for ctx.Err() == nil {
		n, err := r.Read(buf)
		if n > 0 {
			if _, werr := inv.Stdout.Write(buf[:n]); werr != nil {
				return werr, nil
			}
		}
		if err == io.EOF {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
	}
	return nil, ctx.Err()
}

// eachLine calls fn for every line of r (with its newline, if any). It
// returns the first error of fn as werr and of reading as rerr.
func eachLine(ctx context.Context, r io.Reader, fn func([]byte) error) (werr, rerr error) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A long line: gather it whole.
			buf := slices.Clone(line)
			for err == bufio.ErrBufferFull {
				line, err = br.ReadSlice('\n')
				buf = append(buf, line...)
			}
			line = buf
		}
		if len(line) > 0 {
			if werr := fn(line); werr != nil {
				return werr, nil
			}
		}
		if err == io.EOF {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// readFail reports a failed whole read ("memory exhausted" for ENOMEM;
// cancellation is silent) and returns 1.
func readFail(inv *Invocation, err error) int {
	if errors.Is(err, syscall.ENOMEM) {
		return inv.Errorf("memory exhausted")
	}
	return 1
}

// readAll reads r to the end or until ctx is done; more than the
// in-memory limit (maxInMemory) fails with ENOMEM.
func (inv *Invocation) readAll(ctx context.Context, r io.Reader) ([]byte, error) {
	var buf bytes.Buffer
	chunk := make([]byte, 32<<10)
	for {
		if err := ctx.Err(); err != nil {
			return buf.Bytes(), err
		}
		if buf.Len() > inv.sh.memLimit {
			return nil, syscall.ENOMEM
		}
		n, err := r.Read(chunk)
		buf.Write(chunk[:n])
		if err == io.EOF {
			return buf.Bytes(), nil
		}
		if err != nil {
			return buf.Bytes(), err
		}
	}
}

// ctxReader stops reading once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// splitLines splits data after each newline, keeping the newlines.
func splitLines(data []byte) [][]byte {
	if len(data) == 0 {
		return nil
	}
	ls := bytes.SplitAfter(data, []byte("\n"))
	if len(ls[len(ls)-1]) == 0 {
		ls = ls[:len(ls)-1]
	}
	return ls
}

// forEachInput runs fn on each named input ("-" = stdin), printing
// "==> name <==" headers when there are several.
func forEachInput(inv *Invocation, files []string, quiet bool, fn func(name string, r io.Reader) int) int {
	if len(files) == 0 {
		files = []string{"-"}
	}
	status := 0
	for i, name := range files {
		f, err := inv.Open(name)
		if err != nil {
			status = inv.Errorf("cannot open '%s' for reading: %s", name, errnoText(unwrapPathErr(err)))
			continue
		}
		if len(files) > 1 && !quiet {
			if i > 0 {
				fmt.Fprintln(inv.Stdout)
			}
			shown := name
			if name == "-" {
				shown = "standard input"
			}
			fmt.Fprintf(inv.Stdout, "==> %s <==\n", shown)
		}
		st := fn(name, f)
		f.Close()
		if st != 0 {
			status = st
		}
		if st == 141 {
			break
		}
	}
	return status
}

// errWriter remembers the first write error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

// parseSize parses a count with an optional K/M/G (1024) or KB/MB (1000) suffix.
func parseSize(s string) (int64, error) {
	mult := int64(1)
	for _, u := range []struct {
		suf string
		m   int64
	}{{"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000}, {"K", 1 << 10}, {"k", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"b", 512}} {
		if strings.HasSuffix(s, u.suf) {
			s, mult = strings.TrimSuffix(s, u.suf), u.m
			break
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("invalid size %q", s)
	}
	return v * mult, nil
}

// legacyCount turns "-5" into "-n" "5" for head and tail.
func legacyCount(args []string) []string {
	out := make([]string, 0, len(args)+1)
	for i, a := range args {
		afterFlag := i > 0 && (args[i-1] == "-n" || args[i-1] == "-c")
		if !afterFlag && len(a) > 1 && a[0] == '-' && a[1] >= '0' && a[1] <= '9' {
			out = append(out, "-n", a[1:])
			continue
		}
		out = append(out, a)
	}
	return out
}
