package fakecodeinterp

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	_ "embed" // the kernel drivers
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Processes makes the code interpreter's kernels real interpreter
// processes, one long-lived process per python or javascript context, as
// Jupyter runs one kernel process per context (set [Config.Processes]).
// The fake's namespace sandboxes use it inside the sandbox; the wire
// format of /execute is the same as with the in-process kernels.
type Processes struct {
	// Python and Node are the interpreters; "python3" and "node" (looked
	// up in PATH) when empty.
	Python, Node string
	// Prepare adjusts each command before it starts: the sandbox sets the
	// credentials of its default user there.
	Prepare func(*exec.Cmd)
}

//go:embed kernel_python.py
var pythonDriver string

//go:embed kernel_node.js
var nodeDriver string

// markEnv passes a kernel process its output marker (see kernel_python.py).
const markEnv = "SANDBOXKIT_KERNEL_MARK"

// command returns the command of a kernel process for lang, or nil. The
// interpreter is looked up in the PATH of the kernel's environment (the
// sandbox's), not in this process's.
func (p *Processes) command(lang string, env map[string]string) *exec.Cmd {
	var cmd *exec.Cmd
	switch lang {
	case LangPython, "python3":
		cmd = exec.Command(orDefault(p.Python, "python3"), "-c", pythonDriver)
	case LangJavaScript, LangTypeScript:
		cmd = exec.Command(orDefault(p.Node, "node"), "-e", nodeDriver)
	default:
		return nil
	}
	cmd.Path = lookPath(cmd.Args[0], env["PATH"])
	cmd.Err = nil
	return cmd
}

// defaultSearchPath is where interpreters are looked for when the
// environment has no PATH.
const defaultSearchPath = "/usr/local/bin:/usr/bin:/bin"

// lookPath finds name in the directories of path (defaultSearchPath when
// empty); a name with a slash, or one found nowhere, is returned as is
// (starting it then fails with the reason).
func lookPath(name, path string) string {
	if strings.Contains(name, "/") {
		return name
	}
	for _, dir := range filepath.SplitList(orDefault(path, defaultSearchPath)) {
		p := filepath.Join(dir, name)
		if info, err := os.Stat(p); err == nil && info.Mode().IsRegular() && info.Mode()&0o111 != 0 {
			return p
		}
	}
	return name
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// procKernel is a context whose code runs in an interpreter process. The
// process starts at the first execution (the real server starts its
// kernels with the context; starting them lazily saves a process per idle
// default context) and again after it died.
type procKernel struct {
	procs *Processes
	lang  string
	cwd   string

	mu      sync.Mutex
	env     map[string]string  // the environment a new process starts with
	pending map[string]*string // changes the running process has not seen; nil: unset
	proc    *kernelProc
	closed  bool
}

func newProcKernel(procs *Processes, lang, cwd string, env map[string]string) *procKernel {
	return &procKernel{procs: procs, lang: lang, cwd: cwd, env: maps.Clone(env), pending: map[string]*string{}}
}

func (k *procKernel) setenv(key, value string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.env == nil {
		k.env = map[string]string{}
	}
	k.env[key] = value
	k.pending[key] = &value
}

func (k *procKernel) unsetenv(key string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.env, key)
	k.pending[key] = nil
}

// close kills the process; later executions fail.
func (k *procKernel) close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.closed = true
	if k.proc != nil {
		k.proc.kill()
		k.proc = nil
	}
}

// reply is one answer line of a kernel process.
type reply struct {
	Type   string     `json:"type"` // "display" or "done"
	Seq    int        `json:"seq"`
	Result *Result    `json:"result"`
	Error  *ExecError `json:"error"`
}

// exec sends code to the process and relays its output until it answers
// "done". When ctx ends first the process is interrupted (SIGINT, as
// Jupyter interrupts a kernel) and the execution still waits for its
// answer; when the process dies, the execution ends with an error.
func (k *procKernel) exec(ctx context.Context, code string, out kernelOutput) (*Result, *ExecError) {
	p, env, err := k.process(out)
	if err != nil {
		return nil, &ExecError{Name: "KernelError", Value: err.Error()}
	}
	if err := p.send(code, env); err != nil {
		return nil, k.died(p)
	}
	interrupted := false
	for {
		select {
		case <-ctx.Done():
			if !interrupted {
				interrupted = true
				_ = p.cmd.Process.Signal(os.Interrupt)
			}
		case r, ok := <-p.replies:
			if !ok {
				return nil, k.died(p)
			}
			p.stdout.waitFor(r.Seq)
			p.stderr.waitFor(r.Seq)
			if r.Type == "done" {
				// Output after the cell's end (a background thread's) is
				// no execution's.
				p.stdout.setDst(io.Discard)
				p.stderr.setDst(io.Discard)
			} else if r.Result != nil {
				out.display(serverResult(*r.Result))
			}
			p.stdout.release(r.Seq)
			p.stderr.release(r.Seq)
			if r.Type == "done" && r.Result != nil {
				res := serverResult(*r.Result)
				return &res, r.Error
			}
			if r.Type == "done" {
				return nil, r.Error
			}
		}
		if interrupted {
			ctx = context.Background() // signalled once; now wait for the answer
		}
	}
}

// serverResult is r as the server passes it on: a text/plain that starts
// and ends with a single quote (a str's repr) loses them
// (template/server/api/models/result.py Result.__init__).
func serverResult(r Result) Result {
	if len(r.Text) >= 2 && strings.HasPrefix(r.Text, "'") && strings.HasSuffix(r.Text, "'") {
		r.Text = r.Text[1 : len(r.Text)-1]
	}
	return r
}

// process returns the running process, starting one when there is none,
// and the environment changes it has not seen; its output goes to out.
func (k *procKernel) process(out kernelOutput) (*kernelProc, map[string]*string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return nil, nil, errors.New("the context is gone")
	}
	env := k.pending
	k.pending = map[string]*string{}
	if k.proc != nil {
		k.proc.stdout.setDst(out.stdout)
		k.proc.stderr.setDst(out.stderr)
		return k.proc, env, nil
	}
	p, err := startKernelProc(k.procs, k.lang, k.cwd, k.env, out)
	if err != nil {
		return nil, nil, err
	}
	k.proc = p
	return p, nil, nil
}

// died forgets p, so that the next execution starts a new process, and
// returns the error of the execution it was running.
func (k *procKernel) died(p *kernelProc) *ExecError {
	k.mu.Lock()
	if k.proc == p {
		k.proc = nil
	}
	k.mu.Unlock()
	status := p.wait()
	return &ExecError{Name: "DeadKernelError", Value: fmt.Sprintf("The %s kernel process ended (%s); the next execution starts a new one, without the old state", k.lang, status)}
}

// kernelProc is one running interpreter process.
type kernelProc struct {
	cmd            *exec.Cmd
	requests       *os.File // the process's fd 3
	replies        chan reply
	stdout, stderr *markedStream
	exited         chan struct{}
	once           sync.Once
}

// startKernelProc starts lang's interpreter in cwd with env.
func startKernelProc(procs *Processes, lang, cwd string, env map[string]string, out kernelOutput) (*kernelProc, error) {
	cmd := procs.command(lang, env)
	if cmd == nil {
		return nil, fmt.Errorf("no kernel for language %q", lang)
	}
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	mark := "\x1eSANDBOXKIT-" + hex.EncodeToString(nonce[:]) + ":"
	cmd.Dir = cwd
	cmd.Env = envList(env, markEnv+"="+mark, "MPLBACKEND=Agg")
	if procs.Prepare != nil {
		procs.Prepare(cmd)
	}
	files, err := kernelPipes()
	if err != nil {
		return nil, err
	}
	reqR, reqW, repR, repW, outR, outW, errR, errW := files[0], files[1], files[2], files[3], files[4], files[5], files[6], files[7]
	cmd.Stdout, cmd.Stderr = outW, errW
	cmd.ExtraFiles = []*os.File{reqR, repW} // fds 3 and 4
	err = cmd.Start()
	for _, f := range []*os.File{reqR, repW, outW, errW} {
		f.Close()
	}
	if err != nil {
		for _, f := range []*os.File{reqW, repR, outR, errR} {
			f.Close()
		}
		return nil, fmt.Errorf("starting the %s kernel: %w", lang, err)
	}
	p := &kernelProc{
		cmd: cmd, requests: reqW, replies: make(chan reply),
		stdout: newMarkedStream(mark, out.stdout), stderr: newMarkedStream(mark, out.stderr), exited: make(chan struct{}),
	}
	go p.stdout.run(outR)
	go p.stderr.run(errR)
	go p.readReplies(repR)
	return p, nil
}

// kernelPipes makes the four pipes of a kernel process: requests,
// replies, stdout and stderr, each as read end then write end.
func kernelPipes() ([]*os.File, error) {
	var files []*os.File
	for range 4 {
		r, w, err := os.Pipe()
		if err != nil {
			for _, f := range files {
				f.Close()
			}
			return nil, fmt.Errorf("kernel pipes: %w", err)
		}
		files = append(files, r, w)
	}
	return files, nil
}

// envList turns env into a sorted KEY=value list, then extra.
func envList(env map[string]string, extra ...string) []string {
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	list := make([]string, 0, len(keys)+len(extra))
	for _, k := range keys {
		list = append(list, k+"="+env[k])
	}
	return append(list, extra...)
}

// send writes one request.
func (p *kernelProc) send(code string, env map[string]*string) error {
	b, err := json.Marshal(map[string]any{"code": code, "env": env})
	if err != nil {
		return err
	}
	_, err = p.requests.Write(append(b, '\n'))
	return err
}

// readReplies passes each answer line on; the channel closes when the
// process has ended (its replies pipe closed) and been reaped.
func (p *kernelProc) readReplies(r *os.File) {
	defer close(p.replies)
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 256<<20) // a png result is one line
	for sc.Scan() {
		var msg reply
		if json.Unmarshal(sc.Bytes(), &msg) == nil {
			p.replies <- msg
		}
	}
	p.wait()
}

// wait reaps the process once and describes how it ended.
func (p *kernelProc) wait() string {
	p.once.Do(func() {
		_ = p.cmd.Wait()
		p.requests.Close()
		close(p.exited)
	})
	<-p.exited
	return p.cmd.ProcessState.String()
}

// kill ends the process; its readers then see the pipes close.
func (p *kernelProc) kill() {
	_ = p.cmd.Process.Kill()
	p.stdout.release(math.MaxInt)
	p.stderr.release(math.MaxInt)
	go func() {
		for range p.replies { // drain, so readReplies can finish
		}
	}()
}

// markedStream relays one output pipe of a kernel process to the current
// execution's writer, cutting out the marker lines the process writes
// before each answer and counting them. An answer is passed on only after
// the output printed before it (waitFor), and output printed after it
// only once the answer was passed on (release): stdout, stderr and the
// answers travel on three pipes but reach the stream in the order the
// code wrote them.
type markedStream struct {
	mark []byte

	mu       sync.Mutex
	dst      io.Writer
	seen     int // the last marker read
	released int // the last answer passed on
	eof      bool
	changed  chan struct{} // closed and replaced when seen, released or eof change
}

func newMarkedStream(mark string, dst io.Writer) *markedStream {
	return &markedStream{mark: []byte(mark), dst: dst, changed: make(chan struct{})}
}

func (m *markedStream) setDst(w io.Writer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dst = w
}

// run reads r until it ends.
func (m *markedStream) run(r io.ReadCloser) {
	defer r.Close()
	var pending []byte
	chunk := make([]byte, 32<<10)
	for {
		n, err := r.Read(chunk)
		pending = m.consume(append(pending, chunk[:n]...))
		if err != nil {
			m.write(pending)
			m.update(func() { m.eof = true })
			return
		}
	}
}

// consume writes out buf up to the last byte that cannot start a marker,
// records the markers in it, and returns what is left to decide.
func (m *markedStream) consume(buf []byte) []byte {
	for {
		i := bytes.Index(buf, m.mark)
		if i < 0 {
			keep := partialPrefix(buf, m.mark)
			m.write(buf[:len(buf)-keep])
			return append([]byte(nil), buf[len(buf)-keep:]...)
		}
		m.write(buf[:i])
		rest := buf[i+len(m.mark):]
		j := bytes.IndexByte(rest, '\n')
		if j < 0 {
			return append([]byte(nil), buf[i:]...)
		}
		if n, err := strconv.Atoi(string(rest[:j])); err == nil {
			m.update(func() { m.seen = n })
			m.await(func() bool { return m.released >= n })
		}
		buf = rest[j+1:]
	}
}

// partialPrefix returns the length of the longest tail of buf that is a
// proper prefix of mark.
func partialPrefix(buf, mark []byte) int {
	for n := min(len(buf), len(mark)-1); n > 0; n-- {
		if bytes.HasSuffix(buf, mark[:n]) {
			return n
		}
	}
	return 0
}

func (m *markedStream) write(b []byte) {
	if len(b) == 0 {
		return
	}
	m.mu.Lock()
	dst := m.dst
	m.mu.Unlock()
	_, _ = dst.Write(b)
}

// update changes the stream's state under its lock and wakes waiters.
func (m *markedStream) update(change func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	change()
	close(m.changed)
	m.changed = make(chan struct{})
}

// await returns once cond, read under the lock, holds.
func (m *markedStream) await(cond func() bool) {
	for {
		m.mu.Lock()
		if cond() {
			m.mu.Unlock()
			return
		}
		ch := m.changed
		m.mu.Unlock()
		<-ch
	}
}

// waitFor returns once marker n has passed or the stream ended.
func (m *markedStream) waitFor(n int) {
	m.await(func() bool { return m.seen >= n || m.eof })
}

// release lets the stream go on past marker n.
func (m *markedStream) release(n int) {
	m.update(func() { m.released = max(m.released, n) })
}

// Shell returns a [Shell] that runs each bash execution as a real
// `bash -c` process, prepared like the kernels: for [Config.Shell] beside
// [Config.Processes]. ctx ending interrupts it (SIGINT).
func (p *Processes) Shell() Shell {
	return func(ctx context.Context, script, dir string, env map[string]string, stdout, stderr io.Writer) int {
		cmd := exec.Command(lookPath("bash", env["PATH"]), "-c", script)
		cmd.Err = nil
		cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, envList(env), stdout, stderr
		if p.Prepare != nil {
			p.Prepare(cmd)
		}
		if err := cmd.Start(); err != nil {
			fmt.Fprintf(stderr, "bash: %v\n", err)
			return 127
		}
		stop := context.AfterFunc(ctx, func() { _ = cmd.Process.Signal(os.Interrupt) })
		defer stop()
		_ = cmd.Wait()
		return cmd.ProcessState.ExitCode()
	}
}
