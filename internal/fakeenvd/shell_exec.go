package fakeenvd

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"

	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"
)

// execHandler runs every simple command that is not a shell builtin or
// function. It never calls the next handler, so no host process starts.
func (s *shell) execHandler(ctx context.Context, args []string) error {
	hc := interp.HandlerCtx(ctx)
	var stdin io.Reader = hc.Stdin
	f, isFile := hc.Stdin.(*os.File)
	switch {
	case isFile && f != nil:
		// Built-ins blocked reading stdin must wake up when the process
		// is signalled.
		stop := context.AfterFunc(ctx, func() { _ = f.SetReadDeadline(time.Now()) })
		defer stop()
	case isFile || hc.Stdin == nil:
		stdin = strings.NewReader("")
	}
	stdout := hc.Stdout
	if sb, ok := stdout.(*strings.Builder); ok {
		stdout = substWriter{sb, s.memLimit}
	}
	inv := &Invocation{
		Args: args, Stdin: stdin, Stdout: stdout, Stderr: hc.Stderr, Dir: hc.Dir,
		FS: s.fs, User: s.acct.name, UID: s.acct.uid, GID: s.acct.gid, Home: s.acct.home,
		env: hc.Env, sh: s,
	}
	if code := s.runCommand(ctx, inv, args); code != 0 {
		return interp.ExitStatus(uint8(code))
	}
	return nil
}

// runCommand dispatches args: a path runs that file, a name runs the
// built-in, the shell builtin or the first executable script in $PATH.
func (s *shell) runCommand(ctx context.Context, parent *Invocation, args []string) int {
	if hc, ok := handlerCtx(ctx); ok {
		args = s.rewriteProbe(hc, args)
	}
	inv := *parent
	inv.Args = args
	name := args[0]
	switch {
	case name == typeCmd:
		return s.fakeType(&inv)
	case name == commandVCmd:
		return s.fakeCommandV(&inv)
	case name == bgCmd:
		return s.startJob(ctx, &inv)
	case name == lastPIDCmd:
		return s.lastPID(ctx, &inv)
	case name == waitCmd:
		return s.runWait(ctx, &inv)
	case name == killCmd:
		return s.runKill(ctx, &inv)
	case name == jobsCmd:
		return s.runJobs(ctx, &inv)
	case strings.Contains(name, "/"):
		return s.runPath(ctx, &inv, name)
	}
	if b := s.bins[name]; b != nil {
		return b(ctx, &inv)
	}
	if interp.IsBuiltin(name) {
		return s.shellBuiltin(ctx, &inv)
	}
	if p := s.lookPath(&inv, name, true); p != "" {
		return s.runPath(ctx, &inv, p)
	}
	fmt.Fprintf(inv.Stderr, "bash: %s: command not found\n", name)
	return 127
}

// handlerCtx returns the interpreter's handler context, if ctx has one.
func handlerCtx(ctx context.Context) (hc interp.HandlerContext, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return interp.HandlerCtx(ctx), true
}

// shellBuiltin runs an interpreter builtin (echo, printf, true, …) reached
// through env, xargs, timeout or /usr/bin/NAME.
func (s *shell) shellBuiltin(ctx context.Context, inv *Invocation) int {
	hc, ok := handlerCtx(ctx)
	if !ok {
		return inv.Errorf("cannot run the shell builtin here")
	}
	args := append([]string{path.Base(inv.Args[0])}, inv.Args[1:]...)
	if rewritten := s.rewriteProbe(hc, args); rewritten[0] != args[0] {
		return s.runCommand(ctx, inv, rewritten)
	}
	err := hc.Builtin(ctx, args)
	if err == nil {
		return 0
	}
	var n int
	if _, serr := fmt.Sscanf(err.Error(), "builtin exit status %d", &n); serr == nil {
		return n
	}
	return 1
}

// lookPath searches $PATH in the memory filesystem for an executable
// regular file (or any regular file when execOnly is false).
func (s *shell) lookPath(inv *Invocation, name string, execOnly bool) string {
	for _, dir := range strings.Split(inv.env.Get("PATH").String(), ":") {
		if dir == "" {
			dir = inv.Dir
		}
		p := path.Join(inv.Abs(dir), name)
		info, err := s.fs.Stat(p)
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		if !execOnly || info.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// whereIs is what `command -v` and `which` print for name, "" when it is
// not a command.
func (s *shell) whereIs(inv *Invocation, name string) string {
	if strings.Contains(name, "/") {
		if info, err := s.fs.Stat(inv.Abs(name)); err == nil && info.Mode().IsRegular() && info.Mode()&0o111 != 0 {
			return name
		}
		return ""
	}
	if b, ok := s.bins[name]; ok && b != nil || contains(shellBuiltinNames(), name) {
		return path.Join(binDir, name)
	}
	return s.lookPath(inv, name, true)
}

// runPath runs the file at p: a /usr/bin stub runs its built-in, a script
// runs in the shell named by its #! line (or bash when there is none).
func (s *shell) runPath(ctx context.Context, inv *Invocation, p string) int {
	abs := inv.Abs(p)
	info, err := s.fs.Stat(abs)
	if err != nil {
		fmt.Fprintf(inv.Stderr, "bash: %s: %s\n", p, errnoText(unwrapPathErr(err)))
		return 127
	}
	if info.IsDir() {
		fmt.Fprintf(inv.Stderr, "bash: %s: Is a directory\n", p)
		return 126
	}
	head := make([]byte, 256)
	f, err := s.fs.OpenFile(abs, os.O_RDONLY, 0)
	if err != nil {
		fmt.Fprintf(inv.Stderr, "bash: %s: %s\n", p, errnoText(unwrapPathErr(err)))
		return 126
	}
	n, _ := io.ReadFull(f, head)
	f.Close()
	head = head[:n]
	if strings.HasPrefix(string(head), stubMagic) {
		base := path.Base(abs)
		if b := s.bins[base]; b != nil {
			return b(ctx, inv)
		}
		if interp.IsBuiltin(base) {
			return s.shellBuiltin(ctx, inv)
		}
		fmt.Fprintf(inv.Stderr, "bash: %s: command not found\n", p)
		return 127
	}
	if !s.canAccess(info, interp.AccessExec) {
		fmt.Fprintf(inv.Stderr, "bash: %s: Permission denied\n", p)
		return 126
	}
	rest := inv.Args[1:]
	if line, ok := strings.CutPrefix(string(head), "#!"); ok {
		line, _, _ = strings.Cut(line, "\n")
		fields := strings.Fields(line)
		if len(fields) > 0 {
			interpreter := fields[0]
			switch path.Base(interpreter) {
			case "bash", "sh", "dash":
			default:
				if _, err := s.fs.Stat(inv.Abs(interpreter)); err != nil {
					fmt.Fprintf(inv.Stderr, "bash: %s: %s: bad interpreter: No such file or directory\n", p, interpreter)
					return 126
				}
				argv := append([]string{interpreter}, fields[1:]...)
				argv = append(append(argv, p), rest...)
				return s.runCommand(ctx, inv, argv)
			}
		}
	}
	child := *inv
	child.Args = append([]string{"bash", p}, rest...)
	return s.runShellArgs(ctx, &child)
}

// fakeType implements the type builtin without touching the host.
func (s *shell) fakeType(inv *Invocation) int {
	o, names, err := getopt(inv.Args[1:], "tpPaf", "")
	if err != nil {
		fmt.Fprintf(inv.Stderr, "bash: type: %v\n", err)
		return 2
	}
	status := 0
	for _, name := range names {
		kind, where := s.classify(inv, name)
		switch {
		case kind == "" || (o.has('p') || o.has('P')) && where == "":
			if !o.has('t') && !o.has('p') && !o.has('P') {
				fmt.Fprintf(inv.Stderr, "bash: type: %s: not found\n", name)
			}
			status = 1
		case o.has('p') || o.has('P'):
			if kind == "file" || o.has('P') {
				fmt.Fprintln(inv.Stdout, where)
			}
		case o.has('t'):
			fmt.Fprintln(inv.Stdout, kind)
		case kind == "keyword":
			fmt.Fprintf(inv.Stdout, "%s is a shell keyword\n", name)
		case kind == "builtin":
			fmt.Fprintf(inv.Stdout, "%s is a shell builtin\n", name)
		default:
			fmt.Fprintf(inv.Stdout, "%s is %s\n", name, where)
		}
	}
	return status
}

// fakeCommandV implements command -v and command -V.
func (s *shell) fakeCommandV(inv *Invocation) int {
	verbose := inv.Args[1] == "-V"
	status := 0
	for _, name := range inv.Args[2:] {
		kind, where := s.classify(inv, name)
		switch {
		case kind == "":
			if verbose {
				fmt.Fprintf(inv.Stderr, "bash: command: %s: not found\n", name)
			}
			status = 1
		case verbose && kind == "file":
			fmt.Fprintf(inv.Stdout, "%s is %s\n", name, where)
		case verbose:
			fmt.Fprintf(inv.Stdout, "%s is a shell %s\n", name, kind)
		case kind == "file":
			fmt.Fprintln(inv.Stdout, where)
		default:
			fmt.Fprintln(inv.Stdout, name)
		}
	}
	return status
}

// classify tells whether name is a keyword, a shell builtin or a file (and
// where the file is; also set for builtins that have a /usr/bin stub).
func (s *shell) classify(inv *Invocation, name string) (kind, where string) {
	where = s.whereIs(inv, name)
	switch {
	case syntax.IsKeyword(name):
		return "keyword", where
	case interp.IsBuiltin(name):
		return "builtin", where
	case where != "":
		return "file", where
	}
	return "", ""
}
