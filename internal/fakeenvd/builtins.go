package fakeenvd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"

	"mvdan.cc/sh/v3/expand"
)

// Builtin is a shell command implemented in Go. It returns the exit status
// and must return promptly once ctx is done.
type Builtin func(ctx context.Context, inv *Invocation) int

// Invocation is one run of a [Builtin]: its arguments (Args[0] is the
// command name), standard streams, working directory, user and filesystem.
type Invocation struct {
	// Args are the command name and its arguments after expansion.
	Args []string
	// Stdin, Stdout and Stderr are the command's standard streams; Stdin
	// reads EOF when the process has no input.
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Dir is the absolute working directory.
	Dir string
	// FS is the sandbox filesystem.
	FS *MemFS
	// User, UID, GID and Home describe the user the process runs as.
	User     string
	UID, GID int
	Home     string

	env expand.Environ
	sh  *shell
}

// Name is the command name as invoked, without its directory.
func (inv *Invocation) Name() string { return path.Base(inv.Args[0]) }

// Getenv returns the value of a shell variable ("" when unset).
func (inv *Invocation) Getenv(name string) string { return inv.env.Get(name).String() }

// Environ returns the exported variables as sorted "NAME=value" pairs.
func (inv *Invocation) Environ() []string { return exportedEnv(inv.env) }

// Abs resolves p against the working directory.
func (inv *Invocation) Abs(p string) string {
	if p == "" {
		return inv.Dir
	}
	if !path.IsAbs(p) {
		p = path.Join(inv.Dir, p)
	}
	return path.Clean(p)
}

// Open opens p for reading ("-" is standard input).
func (inv *Invocation) Open(p string) (io.ReadCloser, error) {
	if p == "-" {
		return io.NopCloser(inv.Stdin), nil
	}
	f, err := inv.FS.OpenFile(inv.Abs(p), os.O_RDONLY, 0)
	if err != nil {
		return nil, relErr(err, p)
	}
	if info, _ := f.Stat(); info != nil && info.IsDir() {
		f.Close()
		return nil, &fs.PathError{Op: "read", Path: p, Err: errIsDir}
	}
	return f, nil
}

// Create opens p for writing, creating it owned by the user; flag adds
// os.O_TRUNC or os.O_APPEND.
func (inv *Invocation) Create(p string, flag int, perm fs.FileMode) (*File, error) {
	f, err := inv.FS.OpenFileAs(inv.Abs(p), os.O_WRONLY|os.O_CREATE|flag, perm, inv.UID, inv.GID)
	if err != nil {
		return nil, relErr(err, p)
	}
	return f, nil
}

// Errorf prints "name: message" to standard error and returns 1.
func (inv *Invocation) Errorf(format string, args ...any) int {
	fmt.Fprintf(inv.Stderr, "%s: %s\n", inv.Name(), fmt.Sprintf(format, args...))
	return 1
}

// Fail prints "name: err" (with the errno text in the usual shell form)
// to standard error and returns 1.
func (inv *Invocation) Fail(err error) int {
	return inv.Errorf("%s", errText(err))
}

// Run runs another command (a built-in, a shell builtin such as echo, or a
// script) with the same standard streams and returns its exit status.
func (inv *Invocation) Run(ctx context.Context, args []string) int {
	return inv.sh.runCommand(ctx, inv, args)
}

// DefaultBuiltins returns a new map of every built-in command by name.
func DefaultBuiltins() map[string]Builtin {
	m := map[string]Builtin{}
	for _, group := range []map[string]Builtin{fsBuiltins(), textBuiltins(), sysBuiltins(), interpBuiltins()} {
		for k, v := range group {
			m[k] = v
		}
	}
	return m
}

// shellBuiltinNames are interpreter builtins that also get a stub in
// /usr/bin so that `env echo`, `xargs printf` and `which true` work.
func shellBuiltinNames() []string {
	return []string{"echo", "printf", "true", "false", "pwd", "test", "[", "kill"}
}

// exportedEnv lists exported string variables as sorted "NAME=value".
func exportedEnv(env expand.Environ) []string {
	var out []string
	env.Each(func(name string, vr expand.Variable) bool {
		if vr.Exported && vr.IsSet() && vr.Kind == expand.String && !strings.Contains(name, " ") {
			out = append(out, name+"="+vr.Str)
		}
		return true
	})
	slices.Sort(out)
	return slices.Compact(out)
}

// opts is the result of getopt.
type opts struct {
	set  map[byte]bool
	val  map[byte]string
	long map[string]string
}

func (o opts) has(c byte) bool { return o.set[c] }

// getopt parses GNU-style short options (flags may be combined and may
// follow operands; "--" ends options; "-" is an operand). boolFlags are
// flags without a value, valueFlags take one ("-n5" or "-n 5"). Long
// options ("--x" or "--x=v") are collected in long without checking.
func getopt(args []string, boolFlags, valueFlags string) (opts, []string, error) {
	o := opts{set: map[byte]bool{}, val: map[byte]string{}, long: map[string]string{}}
	var operands []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return o, append(operands, args[i+1:]...), nil
		case strings.HasPrefix(a, "--"):
			k, v, _ := strings.Cut(a[2:], "=")
			o.long[k] = v
		case len(a) > 1 && a[0] == '-':
			for j := 1; j < len(a); j++ {
				c := a[j]
				switch {
				case strings.IndexByte(boolFlags, c) >= 0:
					o.set[c] = true
				case strings.IndexByte(valueFlags, c) >= 0:
					v := a[j+1:]
					if v == "" {
						if i+1 >= len(args) {
							return o, nil, fmt.Errorf("option requires an argument -- '%c'", c)
						}
						i++
						v = args[i]
					}
					o.set[c] = true
					o.val[c] = v
					j = len(a)
				default:
					return o, nil, fmt.Errorf("invalid option -- '%c'", c)
				}
			}
		default:
			operands = append(operands, a)
		}
	}
	return o, operands, nil
}

// errIsDir is the errno for "Is a directory" used by Open.
const errIsDir = syscall.EISDIR

// isBrokenPipe reports whether a write failed because the reader went away.
func isBrokenPipe(err error) bool {
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, io.ErrClosedPipe) || errors.Is(err, os.ErrClosed)
}

// relErr rewrites the path of a *fs.PathError to the name the user typed.
func relErr(err error, name string) error {
	if pe, ok := err.(*fs.PathError); ok {
		return &fs.PathError{Op: pe.Op, Path: name, Err: pe.Err}
	}
	return err
}

// errText renders an error like coreutils: "path: No such file or directory".
func errText(err error) string {
	switch e := err.(type) {
	case *fs.PathError:
		return fmt.Sprintf("%s: %s", e.Path, errnoText(e.Err))
	case *os.LinkError:
		return fmt.Sprintf("cannot move '%s' to '%s': %s", e.Old, e.New, errnoText(e.Err))
	}
	return err.Error()
}

// errnoText capitalises an errno message the way strerror(3) does.
func errnoText(err error) string {
	s := err.Error()
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// writeErr reports a failed write to standard output, the usual way a
// command notices ENOSPC or a closed pipe.
func writeErr(inv *Invocation, err error) int {
	if isBrokenPipe(err) {
		return 141
	}
	fmt.Fprintf(inv.Stderr, "%s: write error: %s\n", inv.Name(), errnoText(unwrapPathErr(err)))
	return 1
}

func unwrapPathErr(err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err
	}
	return err
}
