package fakeenvd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"sync/atomic"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"
)

// noFifoTmpDir is the interpreter's own temporary directory. mvdan.cc/sh
// reads $TMPDIR once, when a runner is first reset, creates process
// substitution FIFOs there and opens "<that dir>/sh-interp-*" paths on the
// host directly; so that read is answered with a host path that can never
// exist (a directory below a character device).
const noFifoTmpDir = "/dev/null/sandboxkit-no-tmpdir"

// shell runs scripts for the processes of one user.
type shell struct {
	fs        *MemFS
	bins      map[string]Builtin
	jobs      *jobTable
	acct      account
	accounts  []account
	calls     atomic.Uint64 // calls seen by callHandler, to sample the depth check
	exhausted atomic.Bool   // the process hit maxGoroutines
	memLimit  int           // see maxInMemory
}

func (s *shell) userName(uid int) string {
	for _, a := range s.accounts {
		if a.uid == uid {
			return a.name
		}
	}
	return strconv.Itoa(uid)
}

func (s *shell) groupName(gid int) string {
	for _, a := range s.accounts {
		if a.gid == gid {
			return a.name
		}
	}
	return strconv.Itoa(gid)
}

// script is a shell program to run.
type script struct {
	src    string
	name   string   // $0 and the prefix of error messages
	params []string // positional parameters
	flags  []string // set options for interp.Params ("-e", "-o", "pipefail")
}

// runScript runs sc in a fresh interpreter with inv's streams, directory
// and environment, then waits for its background jobs, and returns the exit
// status. Parse errors and rejected constructs give status 2.
func (s *shell) runScript(ctx context.Context, inv *Invocation, sc script) int {
	ctx, err := s.nestShell(ctx)
	if err != nil {
		fmt.Fprintf(inv.Stderr, "%s: %v\n", sc.name, err)
		return 126
	}
	file, err := syntax.NewParser().Parse(strings.NewReader(sc.src), sc.name)
	if err != nil {
		fmt.Fprintf(inv.Stderr, "%s: %v\n", sc.name, err)
		return 2
	}
	if err := checkSyntax(file); err != nil {
		fmt.Fprintf(inv.Stderr, "%s: %v\n", sc.name, err)
		return 2
	}
	r, err := s.newRunner(inv, sc)
	if err != nil {
		fmt.Fprintf(inv.Stderr, "%s: %v\n", sc.name, err)
		return 2
	}
	sj := newShellJobs(file)
	ctx = withShellJobs(ctx, sj)
	err = r.Run(ctx, file)
	// `bash -c 'job &'` keeps the output pipe open until the job ends;
	// wait for background jobs so their output is not lost.
	sj.waitAll(ctx)
	var es interp.ExitStatus
	switch {
	case err == nil:
		return 0
	case errors.As(err, &es):
		return int(es)
	case ctx.Err() != nil:
		return 1
	}
	fmt.Fprintf(inv.Stderr, "%s: %v\n", sc.name, err)
	return 1
}

// newRunner builds an interpreter whose every host-facing hook is bound to
// the memory filesystem and the built-ins.
func (s *shell) newRunner(inv *Invocation, sc script) (*interp.Runner, error) {
	params := append(append([]string{}, sc.flags...), "--")
	params = append(params, sc.params...)
	r, err := interp.New(
		interp.Env(s.environ(inv.env)),
		func(r *interp.Runner) error { r.Dir = inv.Dir; return nil },
		interp.StdIO(inv.Stdin, inv.Stdout, inv.Stderr),
		interp.Params(params...),
		interp.CallHandler(s.callHandler),
		interp.ExecHandlers(func(interp.ExecHandlerFunc) interp.ExecHandlerFunc { return s.execHandler }),
		interp.OpenHandler(s.openHandler),
		interp.StatHandler(s.statHandler),
		interp.ReadDirHandler2(s.readDirHandler),
		interp.AccessHandler(s.accessHandler),
	)
	if err != nil {
		return nil, fmt.Errorf("fakeenvd: shell: %w", err)
	}
	return r, nil
}

// environ builds the interpreter environment from env: the process's
// variables with the ids, TMPDIR and user homes pinned.
func (s *shell) environ(env expand.Environ) expand.Environ {
	pairs := exportedEnv(env)
	uid := strconv.Itoa(s.acct.uid)
	pairs = append(pairs, "UID="+uid, "EUID="+uid, "GID="+strconv.Itoa(s.acct.gid))
	homes := map[string]string{}
	for _, a := range s.accounts {
		homes[a.name] = a.home
	}
	return &shellEnv{base: expand.ListEnviron(pairs...), homes: homes}
}

// shellEnv is the environment of one interpreter. It answers "HOME <user>"
// lookups for ~user from the sandbox's accounts (unknown users stay
// literal, as in bash) so that the host user database is never read, and
// answers the interpreter's first TMPDIR lookup with noFifoTmpDir; scripts
// then see the process's own TMPDIR (unset by default, as in E2B).
type shellEnv struct {
	base      expand.Environ
	homes     map[string]string
	tmpServed atomic.Bool
}

func (e *shellEnv) Get(name string) expand.Variable {
	if name == "TMPDIR" && !e.tmpServed.Swap(true) {
		return expand.Variable{Set: true, Exported: true, Kind: expand.String, Str: noFifoTmpDir}
	}
	if user, ok := strings.CutPrefix(name, "HOME "); ok {
		home, known := e.homes[user]
		if !known {
			home = "~" + user
		}
		return expand.Variable{Set: true, Kind: expand.String, Str: home}
	}
	return e.base.Get(name)
}

func (e *shellEnv) Each(f func(name string, vr expand.Variable) bool) { e.base.Each(f) }

// checkSyntax rejects constructs that would reach the host: process
// substitution (<(…) and >(…) create FIFOs on the host).
func checkSyntax(file *syntax.File) error {
	var bad *syntax.ProcSubst
	syntax.Walk(file, func(n syntax.Node) bool {
		if ps, ok := n.(*syntax.ProcSubst); ok && bad == nil {
			bad = ps
		}
		return bad == nil
	})
	if bad != nil {
		return fmt.Errorf("line %d: process substitution %s...) is not supported in this sandbox", bad.Pos().Line(), bad.Op)
	}
	return nil
}

// runShellArgs implements bash/sh: it parses the shell's options and runs
// -c SCRIPT, a script file or a script read from standard input.
func (s *shell) runShellArgs(ctx context.Context, inv *Invocation) int {
	name := inv.Name()
	args := inv.Args[1:]
	var flags []string
	cmdMode := false
	i := 0
parse:
	for i < len(args) {
		a := args[i]
		switch {
		case a == "--" || a == "-":
			i++
			break parse
		case strings.HasPrefix(a, "--"):
			switch a {
			case "--login", "--norc", "--noprofile", "--posix", "--noediting":
			default:
				fmt.Fprintf(inv.Stderr, "%s: %s: invalid option\n", name, a)
				return 2
			}
			i++
		case len(a) > 1 && (a[0] == '-' || a[0] == '+'):
			for _, c := range a[1:] {
				switch c {
				case 'c':
					cmdMode = true
				case 'l', 'i', 's', 'r', 'p', 'h', 'B', 'H', 'm':
				case 'e', 'u', 'x', 'f', 'n', 'a':
					flags = append(flags, string(a[0])+string(c))
				case 'o':
					if i+1 >= len(args) {
						fmt.Fprintf(inv.Stderr, "%s: -o: option requires an argument\n", name)
						return 2
					}
					i++
					flags = append(flags, string(a[0])+"o", args[i])
				default:
					fmt.Fprintf(inv.Stderr, "%s: %c%c: invalid option\n", name, a[0], c)
					return 2
				}
			}
			i++
		default:
			break parse
		}
	}
	rest := args[i:]
	sc := script{name: name, flags: flags}
	switch {
	case cmdMode:
		if len(rest) == 0 {
			fmt.Fprintf(inv.Stderr, "%s: -c: option requires an argument\n", name)
			return 2
		}
		sc.src = rest[0]
		if len(rest) > 1 {
			sc.name, sc.params = rest[1], rest[2:]
		}
	case len(rest) > 0:
		data, err := inv.FS.ReadFile(inv.Abs(rest[0]))
		if err != nil {
			fmt.Fprintf(inv.Stderr, "%s: %s: %s\n", name, rest[0], errnoText(unwrapPathErr(err)))
			return 127
		}
		sc.src, sc.name, sc.params = string(data), rest[0], rest[1:]
	default:
		src, err := readScript(ctx, inv)
		if err != nil {
			return 1
		}
		sc.src = src
	}
	return s.runScript(ctx, inv, sc)
}

// commandLine quotes argv into one shell command line.
func commandLine(argv []string) (string, error) {
	parts := make([]string, len(argv))
	for i, a := range argv {
		q, err := syntax.Quote(a, syntax.LangBash)
		if err != nil {
			return "", fmt.Errorf("fakeenvd: argument %d: %w", i, err)
		}
		parts[i] = q
	}
	return strings.Join(parts, " "), nil
}

// rootInvocation is the invocation a process starts from.
func (s *shell) rootInvocation(dir string, env []string, stdin io.Reader, stdout, stderr io.Writer) *Invocation {
	return &Invocation{
		Args: []string{"bash"}, Stdin: stdin, Stdout: stdout, Stderr: stderr,
		Dir: path.Clean(dir), FS: s.fs, User: s.acct.name, UID: s.acct.uid, GID: s.acct.gid,
		Home: s.acct.home, env: expand.ListEnviron(env...), sh: s,
	}
}
