package fakeenvd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/sandboxkit/sandboxkit/internal/envdapi"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"
)

// Job control as bash gives it to a non-interactive script. The
// interpreter's own background jobs are goroutines named "g1", "g2", ...
// that nothing can signal, so every `cmd &` is rewritten before it runs
// into a call of bgCmd, which starts cmd as a job with a PID from the
// daemon's process counter, its own cancellation and bash's exit codes
// (128 + signal). `$!` becomes $(lastPIDCmd); wait, kill and jobs are
// rewritten to waitCmd, killCmd and jobsCmd, which read the job table.
const (
	bgCmd      = "\x00sandboxkit-bg"
	lastPIDCmd = "\x00sandboxkit-last-pid"
	waitCmd    = "\x00sandboxkit-wait"
	killCmd    = "\x00sandboxkit-kill"
	jobsCmd    = "\x00sandboxkit-jobs"
)

// job is one background command.
type job struct {
	pid    uint32
	number int    // %N within the shell that started it
	text   string // the command as `jobs` prints it
	cancel context.CancelCauseFunc
	done   chan struct{}
	code   int // exit status, set before done is closed
	// reported is set once `wait -n` returned the job's status.
	reported bool
}

// jobTable holds the running jobs of a daemon by PID, so that `kill PID`
// from any command of the sandbox reaches them.
type jobTable struct {
	procs *procTable

	mu   sync.Mutex
	byID map[uint32]*job
}

func newJobTable(procs *procTable) *jobTable {
	return &jobTable{procs: procs, byID: map[uint32]*job{}}
}

func (t *jobTable) add(j *job) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.byID[j.pid] = j
}

func (t *jobTable) remove(pid uint32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.byID, pid)
}

func (t *jobTable) get(pid uint32) *job {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byID[pid]
}

// shellJobs is the job list of one running shell (one script): what
// `jobs`, `wait`, `%N` and `$!` refer to.
type shellJobs struct {
	stmts []*syntax.Stmt // the background statements, by bgCmd's index
	funcs []*syntax.Stmt // the script's function definitions, for its jobs

	mu      sync.Mutex
	list    []*job
	lastPID uint32
	changed chan struct{} // closed and replaced when a job ends
}

type shellJobsKey struct{}

func withShellJobs(ctx context.Context, sj *shellJobs) context.Context {
	return context.WithValue(ctx, shellJobsKey{}, sj)
}

func shellJobsOf(ctx context.Context) *shellJobs {
	sj, _ := ctx.Value(shellJobsKey{}).(*shellJobs)
	return sj
}

// newShellJobs rewrites file for job control (rewriteJobs) and returns the
// job list of the shell that runs it.
func newShellJobs(file *syntax.File) *shellJobs {
	sj := &shellJobs{changed: make(chan struct{})}
	sj.adopt(file)
	return sj
}

// adopt rewrites one more program run by the same shell (a line of an
// interactive shell) for job control, its jobs numbered after the
// earlier ones. Only the shell's own goroutine calls it.
func (sj *shellJobs) adopt(file *syntax.File) {
	stmts, funcs := rewriteJobs(file, len(sj.stmts))
	sj.stmts = append(sj.stmts, stmts...)
	sj.funcs = append(sj.funcs, funcs...)
}

// child is the job list of a job started by this shell: empty, with the
// same statements and functions.
func (sj *shellJobs) child() *shellJobs {
	return &shellJobs{stmts: slices.Clip(sj.stmts), funcs: slices.Clip(sj.funcs), changed: make(chan struct{})}
}

// rewriteJobs replaces every background statement of file with a call of
// bgCmd and every $! with $(lastPIDCmd), and returns the statements the
// calls start and the function definitions of the script.
// The calls name their statement by base + its index in stmts.
func rewriteJobs(file *syntax.File, base int) (stmts, funcs []*syntax.Stmt) {
	syntax.Walk(file, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Stmt:
			if _, ok := n.Cmd.(*syntax.FuncDecl); ok {
				funcs = append(funcs, n)
			}
			if n.Background || n.Disown {
				saved := *n
				saved.Background, saved.Disown = false, false
				stmts = append(stmts, &saved)
				*n = syntax.Stmt{Position: n.Position, Cmd: callOf(bgCmd, strconv.Itoa(base+len(stmts)-1))}
			}
		case *syntax.Word:
			for i, part := range n.Parts {
				n.Parts[i] = rewriteBang(part)
			}
		case *syntax.DblQuoted:
			for i, part := range n.Parts {
				n.Parts[i] = rewriteBang(part)
			}
		}
		return true
	})
	return stmts, funcs
}

// rewriteBang turns $! into $(lastPIDCmd).
func rewriteBang(part syntax.WordPart) syntax.WordPart {
	pe, ok := part.(*syntax.ParamExp)
	if !ok || pe.Param == nil || pe.Param.Value != "!" || pe.Excl || pe.Length || pe.Index != nil || pe.Exp != nil || pe.Repl != nil || pe.Slice != nil {
		return part
	}
	return &syntax.CmdSubst{Left: pe.Pos(), Right: pe.End(), Stmts: []*syntax.Stmt{{Position: pe.Pos(), Cmd: callOf(lastPIDCmd)}}}
}

func callOf(args ...string) *syntax.CallExpr {
	call := &syntax.CallExpr{}
	for _, a := range args {
		call.Args = append(call.Args, &syntax.Word{Parts: []syntax.WordPart{&syntax.Lit{Value: a}}})
	}
	return call
}

// startJob implements bgCmd: it runs the saved statement in a fresh
// interpreter with the caller's directory, variables and output, stdin
// from /dev/null (bash's rule for a background command without job
// control). The job knows the script's functions (their definitions are
// replayed first), not those made by eval or source.
func (s *shell) startJob(ctx context.Context, inv *Invocation) int {
	sj := shellJobsOf(ctx)
	idx, err := strconv.Atoi(inv.Args[len(inv.Args)-1])
	if sj == nil || err != nil || idx < 0 || idx >= len(sj.stmts) {
		return inv.Errorf("no such background command")
	}
	stmt := sj.stmts[idx]
	var text strings.Builder
	_ = syntax.NewPrinter(syntax.SingleLine(true)).Print(&text, stmt)
	nested, err := s.nestShell(ctx)
	if err != nil {
		return inv.Errorf("%v", err)
	}
	jobCtx, cancel := context.WithCancelCause(nested)
	j := &job{pid: s.jobs.procs.allocPID(), text: text.String(), cancel: cancel, done: make(chan struct{})}
	child := *inv
	child.Stdin = strings.NewReader("")
	child.env = expand.ListEnviron(allVars(inv.env)...)
	r, err := s.newRunner(&child, script{name: "bash"})
	if err != nil {
		cancel(nil)
		return inv.Errorf("%v", err)
	}
	sj.add(j)
	s.jobs.add(j)
	// Read the shell's statements here, on its own goroutine: an
	// interactive shell adopts more of them with each line.
	own, funcs := sj.child(), slices.Clip(sj.funcs)
	go func() {
		code := runStatus(jobCtx, runJob(withShellJobs(jobCtx, own), r, funcs, stmt))
		var sig killSignal
		if cause := context.Cause(jobCtx); ctx.Err() == nil && errors.As(cause, &sig) {
			code = 128 + int(sig)
		}
		cancel(nil)
		s.jobs.remove(j.pid)
		sj.finish(j, code)
	}()
	return 0
}

// runJob defines funcs in r, then runs stmt.
func runJob(ctx context.Context, r *interp.Runner, funcs []*syntax.Stmt, stmt *syntax.Stmt) error {
	for _, f := range funcs {
		if err := r.Run(ctx, f); err != nil {
			return err
		}
	}
	return r.Run(ctx, stmt)
}

// allVars lists every set string variable as "NAME=value", so that a job
// sees the script's variables as a forked bash does.
func allVars(env expand.Environ) []string {
	var out []string
	env.Each(func(name string, vr expand.Variable) bool {
		if vr.IsSet() && vr.Kind == expand.String && !strings.Contains(name, " ") {
			out = append(out, name+"="+vr.Str)
		}
		return true
	})
	return out
}

func (sj *shellJobs) add(j *job) {
	sj.mu.Lock()
	defer sj.mu.Unlock()
	j.number = len(sj.list) + 1
	sj.list = append(sj.list, j)
	sj.lastPID = j.pid
}

// finish records j's exit status and wakes `wait -n`.
func (sj *shellJobs) finish(j *job, code int) {
	sj.mu.Lock()
	defer sj.mu.Unlock()
	j.code = code
	close(j.done)
	close(sj.changed)
	sj.changed = make(chan struct{})
}

// find resolves a job spec: a PID or %N, %%, %+ and %- (bash's job specs).
func (sj *shellJobs) find(spec string) *job {
	sj.mu.Lock()
	defer sj.mu.Unlock()
	if rest, ok := strings.CutPrefix(spec, "%"); ok {
		n := len(sj.list)
		switch rest {
		case "", "%", "+":
		case "-":
			n--
		default:
			var err error
			if n, err = strconv.Atoi(rest); err != nil {
				return nil
			}
		}
		if n < 1 || n > len(sj.list) {
			return nil
		}
		return sj.list[n-1]
	}
	pid, err := strconv.ParseUint(spec, 10, 32)
	if err != nil {
		return nil
	}
	for _, j := range sj.list {
		if j.pid == uint32(pid) {
			return j
		}
	}
	return nil
}

func (sj *shellJobs) snapshot() ([]*job, chan struct{}) {
	sj.mu.Lock()
	defer sj.mu.Unlock()
	return slices.Clone(sj.list), sj.changed
}

// waitAll waits for every job (the end of a script, and `wait`).
func (sj *shellJobs) waitAll(ctx context.Context) {
	jobs, _ := sj.snapshot()
	for _, j := range jobs {
		select {
		case <-j.done:
		case <-ctx.Done():
			return
		}
	}
}

// runWait implements wait: no operand waits for every job and returns 0;
// -n waits for the next job to end and returns its status (127 without
// jobs); operands (PIDs or %N) return the last one's status, 127 for one
// that is not a child of this shell.
func (s *shell) runWait(ctx context.Context, inv *Invocation) int {
	sj := shellJobsOf(ctx)
	args := inv.Args[1:]
	if sj == nil {
		sj = &shellJobs{changed: make(chan struct{})}
	}
	if len(args) > 0 && args[0] == "-n" {
		return sj.waitNext(ctx)
	}
	if len(args) == 0 {
		sj.waitAll(ctx)
		jobs, _ := sj.snapshot()
		for _, j := range jobs {
			sj.reap(j)
		}
		return 0
	}
	code := 0
	for _, a := range args {
		j := sj.find(a)
		if j == nil {
			if strings.HasPrefix(a, "%") {
				fmt.Fprintf(inv.Stderr, "bash: wait: %s: no such job\n", a)
			} else {
				fmt.Fprintf(inv.Stderr, "bash: wait: pid %s is not a child of this shell\n", a)
			}
			code = 127
			continue
		}
		select {
		case <-j.done:
			code = j.code
			sj.reap(j) // bash forgets a job once waited for
		case <-ctx.Done():
			return 1
		}
	}
	return code
}

// waitNext is `wait -n`: the status of the next job to end, or of one that
// ended and was not yet reported by `wait -n`; 127 when none is left.
func (sj *shellJobs) waitNext(ctx context.Context) int {
	for {
		jobs, changed := sj.snapshot()
		running := false
		for _, j := range jobs {
			select {
			case <-j.done:
				if sj.reap(j) {
					return j.code
				}
			default:
				running = true
			}
		}
		if !running {
			return 127
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return 1
		}
	}
}

// reap marks an ended job reported; false if it already was.
func (sj *shellJobs) reap(j *job) bool {
	sj.mu.Lock()
	defer sj.mu.Unlock()
	if j.reported {
		return false
	}
	j.reported = true
	return true
}

// signalNames maps the names kill accepts to signals.
var signalNames = map[string]syscall.Signal{
	"HUP": syscall.SIGHUP, "INT": syscall.SIGINT, "QUIT": syscall.SIGQUIT,
	"KILL": syscall.SIGKILL, "TERM": syscall.SIGTERM, "USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2,
}

// parseSignal reads a signal as kill takes it: a number or a name with or
// without SIG.
func parseSignal(s string) (syscall.Signal, bool) {
	if n, err := strconv.Atoi(s); err == nil {
		return syscall.Signal(n), n >= 0 && n < 65
	}
	sig, ok := signalNames[strings.TrimPrefix(strings.ToUpper(s), "SIG")]
	return sig, ok
}

// runKill implements kill [-s SIG | -SIG] PID|%N...: a job of the sandbox
// ends with status 128 + SIG; a process the daemon started (Process/List)
// is signalled as SendSignal does. Signal 0 only checks that the target
// exists.
func (s *shell) runKill(ctx context.Context, inv *Invocation) int {
	args := inv.Args[1:]
	sig := syscall.SIGTERM
	if len(args) > 0 && args[0] == "-l" {
		fmt.Fprintln(inv.Stdout, " 1) SIGHUP\t 2) SIGINT\t 3) SIGQUIT\t 9) SIGKILL\t10) SIGUSR1\t12) SIGUSR2\t15) SIGTERM")
		return 0
	}
	if len(args) > 1 && args[0] == "-s" {
		var ok bool
		if sig, ok = parseSignal(args[1]); !ok {
			fmt.Fprintf(inv.Stderr, "bash: kill: %s: invalid signal specification\n", args[1])
			return 1
		}
		args = args[2:]
	} else if len(args) > 0 && strings.HasPrefix(args[0], "-") && args[0] != "--" {
		var ok bool
		if sig, ok = parseSignal(args[0][1:]); !ok {
			fmt.Fprintf(inv.Stderr, "bash: kill: %s: invalid signal specification\n", args[0][1:])
			return 1
		}
		args = args[1:]
	}
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(inv.Stderr, "kill: usage: kill [-s sigspec | -n signum | -sigspec] pid | jobspec ... or kill -l [sigspec]")
		return 2
	}
	code := 0
	for _, a := range args {
		if !s.signalTarget(ctx, a, sig) {
			if strings.HasPrefix(a, "%") {
				fmt.Fprintf(inv.Stderr, "bash: kill: %s: no such job\n", a)
			} else if _, err := strconv.ParseUint(a, 10, 32); err != nil {
				fmt.Fprintf(inv.Stderr, "bash: kill: %s: arguments must be process or job IDs\n", a)
			} else {
				fmt.Fprintf(inv.Stderr, "bash: kill: (%s) - No such process\n", a)
			}
			code = 1
		}
	}
	return code
}

// signalTarget delivers sig to a job spec or PID; false when there is no
// such job or process.
func (s *shell) signalTarget(ctx context.Context, target string, sig syscall.Signal) bool {
	var j *job
	if sj := shellJobsOf(ctx); sj != nil {
		j = sj.find(target)
	}
	if j == nil && !strings.HasPrefix(target, "%") {
		if pid, err := strconv.ParseUint(target, 10, 32); err == nil {
			j = s.jobs.get(uint32(pid))
			if j == nil {
				return s.signalProcess(uint32(pid), sig)
			}
		}
	}
	if j == nil {
		return false
	}
	select {
	case <-j.done:
		return false
	default:
	}
	if sig != 0 {
		j.cancel(killSignal(sig))
	}
	return true
}

// signalProcess signals a process the daemon started.
func (s *shell) signalProcess(pid uint32, sig syscall.Signal) bool {
	p, err := s.jobs.procs.get(envdapi.ProcessSelector{Pid: &pid})
	if err != nil {
		return false
	}
	if sig != 0 {
		p.signal(sig)
	}
	return true
}

// runJobs implements jobs [-l|-p]: the running jobs of this shell, the
// latest marked + and the one before it -.
func (s *shell) runJobs(ctx context.Context, inv *Invocation) int {
	sj := shellJobsOf(ctx)
	if sj == nil {
		return 0
	}
	jobs, _ := sj.snapshot()
	var live []*job
	for _, j := range jobs {
		select {
		case <-j.done:
		default:
			live = append(live, j)
		}
	}
	for i, j := range live {
		mark := " "
		switch i {
		case len(live) - 1:
			mark = "+"
		case len(live) - 2:
			mark = "-"
		}
		switch {
		case slices.Contains(inv.Args[1:], "-p"):
			fmt.Fprintf(inv.Stdout, "%d\n", j.pid)
		case slices.Contains(inv.Args[1:], "-l"):
			fmt.Fprintf(inv.Stdout, "[%d]%s %d Running                 %s &\n", j.number, mark, j.pid, j.text)
		default:
			fmt.Fprintf(inv.Stdout, "[%d]%s  Running                 %s &\n", j.number, mark, j.text)
		}
	}
	return 0
}

// lastPID implements $!: the PID of the latest job of this shell, empty
// before the first.
func (s *shell) lastPID(ctx context.Context, inv *Invocation) int {
	if sj := shellJobsOf(ctx); sj != nil {
		sj.mu.Lock()
		pid := sj.lastPID
		sj.mu.Unlock()
		if pid != 0 {
			fmt.Fprint(inv.Stdout, pid)
		}
	}
	return 0
}

// runStatus is the exit status of an interpreter run that returned err.
func runStatus(ctx context.Context, err error) int {
	var es interp.ExitStatus
	switch {
	case err == nil:
		return 0
	case errors.As(err, &es):
		return int(es)
	case ctx.Err() != nil:
		return 1
	}
	return 1
}
