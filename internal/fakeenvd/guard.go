package fakeenvd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"runtime"
	"strings"
	"syscall"
)

// Limits that keep a runaway script from taking the whole host process
// down: unbounded recursion grows the goroutine stack toward a fatal
// overflow (and slows the interpreter quadratically), and a fork bomb
// exhausts memory.
const (
	// maxStackFrames bounds the Go stack of one shell goroutine; a shell
	// function level takes about 12 frames, so this allows ~1000 levels.
	maxStackFrames = 12_000
	// depthCheckEvery samples the (linear-cost) stack depth check.
	depthCheckEvery = 16
	// maxShellNesting bounds shells started from shells (bash -c, scripts).
	maxShellNesting = 100
	// maxGoroutines bounds the goroutines of the whole program (pipelines
	// and background jobs each take some); it stays below the race
	// detector's limit of 8128.
	maxGoroutines = 4000
	// maxInMemory bounds what one command holds in memory: the output of a
	// command substitution and the input that sort, tail and friends read
	// whole.
	maxInMemory = 256 << 20
)

// forkFailed is bash's message when no more processes can be made.
const forkFailed = "fork: retry: Resource temporarily unavailable"

// tooDeep reports whether the calling goroutine's stack holds more than
// maxStackFrames frames.
func tooDeep() bool {
	var pc [1]uintptr
	return runtime.Callers(maxStackFrames, pc[:]) > 0
}

// checkCall fails a command once the process has started too many
// goroutines (from then on every command of the process fails, which ends
// a fork bomb) or, on sampled calls, recursed too deeply.
func (s *shell) checkCall(name string) error {
	if s.exhausted.Load() {
		return errors.New(forkFailed)
	}
	if runtime.NumGoroutine() > maxGoroutines {
		s.exhausted.Store(true)
		return errors.New(forkFailed)
	}
	if s.calls.Add(1)%depthCheckEvery == 0 && tooDeep() {
		return fmt.Errorf("%s: maximum function nesting level exceeded (%d)", name, maxStackFrames/12)
	}
	return nil
}

// nestingKey is the context key of the shell nesting level.
type nestingKey struct{}

// nestShell returns ctx one shell level deeper, or an error beyond
// maxShellNesting or when the process is out of goroutines.
func (s *shell) nestShell(ctx context.Context) (context.Context, error) {
	if s.exhausted.Load() || runtime.NumGoroutine() > maxGoroutines {
		s.exhausted.Store(true)
		return nil, errors.New(forkFailed)
	}
	level, _ := ctx.Value(nestingKey{}).(int)
	if level >= maxShellNesting {
		return nil, fmt.Errorf("maximum shell nesting level exceeded (%d)", maxShellNesting)
	}
	return context.WithValue(ctx, nestingKey{}, level+1), nil
}

// substWriter caps the output a command writes into a command
// substitution ($(...)), which the interpreter keeps in memory.
type substWriter struct {
	sb    *strings.Builder
	limit int
}

func (w substWriter) Write(p []byte) (int, error) {
	if w.sb.Len()+len(p) > w.limit {
		return 0, &fs.PathError{Op: "write", Path: "command substitution", Err: syscall.ENOMEM}
	}
	return w.sb.Write(p)
}
