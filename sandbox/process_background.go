package sandbox

import (
	"context"
	"sync"
)

// DefaultOutputBufferLimit is how many bytes of each output stream a
// [Process] keeps when [BackgroundOptions.BufferLimit] is zero.
const DefaultOutputBufferLimit = 16 << 20

// opReadOutput names the client-side step of reading buffered output.
const opReadOutput = "read process output"

// BackgroundOptions configures [Envd.StartBackground]. The zero value (or
// nil) gives defaults.
type BackgroundOptions struct {
	// Cwd is the working directory; empty means the user's home.
	Cwd string
	// Envs are added to the sandbox's environment variables.
	Envs map[string]string
	// Stdin keeps the command's standard input open for
	// [Process.SendInput] until [Process.CloseStdin]; when false it is
	// closed at once, so a command reading it sees end of file.
	Stdin bool
	// BufferLimit is how many bytes of each output stream are kept for
	// [Process.ReadOutput]; beyond it the oldest bytes are dropped. Zero
	// means [DefaultOutputBufferLimit]; negative is invalid.
	BufferLimit int
}

// Cursor is a position in a process's output: the number of bytes of each
// stream read so far. The zero Cursor is the start of the output.
type Cursor struct {
	Stdout int64 `json:"stdout"`
	Stderr int64 `json:"stderr"`
}

// Output is the result of [Process.ReadOutput].
type Output struct {
	// Stdout and Stderr are the bytes after the cursor that had not been
	// returned for it before.
	Stdout []byte
	Stderr []byte
	// Next is the cursor to pass to the next read.
	Next Cursor
	// Dropped is true when bytes between the given cursor and the oldest
	// byte still buffered were discarded because a stream exceeded its
	// buffer limit; Next skips them.
	Dropped bool
	// More is true when buffered bytes remain after Next (maxBytes was reached).
	More bool
	// Running is true while the event stream is being consumed. Once it is
	// false no more output will arrive: Exit tells how the process ended,
	// or, when Exit is nil, [Process.Err] tells why the stream stopped.
	Running bool
	// Exit is set once the process has ended.
	Exit *ProcessExit
}

// Process is a command running in the background, from
// [Envd.StartBackground] or [Envd.AttachProcess].
//
// Goroutine ownership: each Process owns exactly one goroutine, started
// when the Process is returned. It alone reads the process's event stream
// and appends the output to two bounded buffers, one per stream. It returns
// when the process's end event has been read, when the stream fails, or
// when Close cancels the stream; Close waits for it, so no goroutine
// outlives Close or the process's end. Every method is safe for concurrent
// use; none of them blocks on the goroutine except Wait and Close.
type Process struct {
	envd   *Envd
	pid    uint32
	cancel context.CancelFunc
	done   chan struct{} // closed when the consuming goroutine returns

	mu       sync.Mutex
	stdout   ringBuffer
	stderr   ringBuffer
	exit     *ProcessExit
	err      error
	finished bool // no more output will arrive
}

// StartBackground starts a shell command line ("/bin/bash -l -c <command>")
// and returns as soon as the daemon has reported its pid. The command keeps
// running after ctx ends; ctx bounds only the start, as does the
// platform's request timeout ([Options.RequestTimeout]). Its output is
// collected into bounded buffers until it ends or Close is called.
//
// Operation: POST /process.Process/Start
func (e *Envd) StartBackground(ctx context.Context, command string, opts *BackgroundOptions) (*Process, error) {
	const op = OpProcessStart
	if opts == nil {
		opts = &BackgroundOptions{}
	}
	if command == "" {
		return nil, invalidArgument(op, "command")
	}
	if opts.BufferLimit < 0 {
		return nil, invalidArgument(op, "buffer_limit")
	}
	return e.background(ctx, op, opts.BufferLimit, func(streamCtx context.Context) (*ProcessStream, error) {
		return e.StartProcess(streamCtx, shellConfig(command, opts.Cwd, opts.Envs, opts.Stdin))
	})
}

// AttachProcess returns a background handle on a process that is already
// running, collecting its output from now on into buffers of bufferLimit
// bytes per stream (0 means [DefaultOutputBufferLimit]). Output produced
// before the call is not available. ctx bounds only the attach.
//
// Operation: POST /process.Process/Connect
func (e *Envd) AttachProcess(ctx context.Context, pid uint32, bufferLimit int) (*Process, error) {
	const op = OpProcessConnect
	if bufferLimit < 0 {
		return nil, invalidArgument(op, "buffer_limit")
	}
	return e.background(ctx, op, bufferLimit, func(streamCtx context.Context) (*ProcessStream, error) {
		return e.ConnectProcess(streamCtx, pid)
	})
}

// background opens a stream with open on a context detached from ctx (so
// that it outlives the call) while honouring ctx until the stream is open,
// then starts the consuming goroutine.
func (e *Envd) background(ctx context.Context, op string, limit int, open func(context.Context) (*ProcessStream, error)) (*Process, error) {
	if limit == 0 {
		limit = DefaultOutputBufferLimit
	}
	streamCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	st, err := e.openStream(ctx, op, cancel, func() (*ProcessStream, error) { return open(streamCtx) })
	if !stop() {
		// ctx ended while the stream was being opened.
		cancel()
		if st != nil {
			_ = st.Close()
			if op == OpProcessStart {
				e.killAfter(ctx, st.Pid())
			}
		}
		return nil, transportError(op, ctx.Err())
	}
	if err != nil {
		cancel()
		return nil, err
	}
	p := &Process{envd: e, pid: st.Pid(), cancel: cancel, done: make(chan struct{}),
		stdout: ringBuffer{limit: limit}, stderr: ringBuffer{limit: limit}}
	go p.consume(st)
	return p, nil
}

// consume is the Process's goroutine.
func (p *Process) consume(st *ProcessStream) {
	defer close(p.done)
	defer st.Close()
	for st.Receive() {
		ev := st.Event()
		p.mu.Lock()
		p.stdout.write(ev.Stdout)
		p.stderr.write(ev.Stderr)
		if ev.Exit != nil {
			x := *ev.Exit
			p.exit = &x
		}
		p.mu.Unlock()
	}
	p.mu.Lock()
	if p.exit == nil {
		p.err = st.Err()
	}
	p.finished = true
	p.mu.Unlock()
	p.cancel()
}

// Pid returns the process ID.
func (p *Process) Pid() uint32 { return p.pid }

// Done returns a channel that is closed once no more output will arrive and
// the consuming goroutine has returned.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exit returns how the process ended, or nil while it runs (or when its
// end was never seen).
func (p *Process) Exit() *ProcessExit {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exit == nil {
		return nil
	}
	x := *p.exit
	return &x
}

// Err returns why the event stream stopped before the process's end was
// seen (an *Error; category unavailable after Close), or nil.
func (p *Process) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Wait blocks until the process ends and returns how it ended. It fails
// when ctx ends first, or when the event stream stopped before the end
// (for example after Close, or when the daemon went away).
func (p *Process) Wait(ctx context.Context) (*ProcessExit, error) {
	select {
	case <-p.done:
	default:
		select {
		case <-p.done:
		case <-ctx.Done():
			return nil, transportError("wait for process", ctx.Err())
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exit != nil {
		x := *p.exit
		return &x, nil
	}
	return nil, p.err
}

// ReadOutput returns the output after cursor that the buffers still hold,
// at most maxBytes of both streams together (split fairly between them;
// maxBytes <= 0 means no limit). Reading again from the returned Next
// cursor yields only bytes not yet returned, so no byte is lost or repeated
// except those the buffer limit dropped, which Output.Dropped reports. A
// cursor beyond the output is an invalid_argument error naming "cursor".
func (p *Process) ReadOutput(cursor Cursor, maxBytes int) (*Output, error) {
	if cursor.Stdout < 0 || cursor.Stderr < 0 {
		return nil, invalidArgument(opReadOutput, "cursor")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if cursor.Stdout > p.stdout.end || cursor.Stderr > p.stderr.end {
		return nil, invalidArgument(opReadOutput, "cursor")
	}
	outFrom, outSkipped := p.stdout.clamp(cursor.Stdout)
	errFrom, errSkipped := p.stderr.clamp(cursor.Stderr)
	outAvail, errAvail := p.stdout.end-outFrom, p.stderr.end-errFrom
	nOut, nErr := outAvail, errAvail
	if maxBytes > 0 {
		limit := int64(maxBytes)
		nOut = min(outAvail, limit/2)
		nErr = min(errAvail, limit-nOut)
		nOut = min(outAvail, limit-nErr)
	}
	o := &Output{
		Stdout:  p.stdout.read(outFrom, nOut),
		Stderr:  p.stderr.read(errFrom, nErr),
		Next:    Cursor{Stdout: outFrom + nOut, Stderr: errFrom + nErr},
		Dropped: outSkipped || errSkipped,
		More:    nOut < outAvail || nErr < errAvail,
		Running: !p.finished && p.exit == nil,
	}
	if p.exit != nil {
		x := *p.exit
		o.Exit = &x
	}
	return o, nil
}

// Kill sends sig (SIGTERM or SIGKILL) to the process. The handle keeps
// collecting output until the process's end arrives.
//
// Operation: POST /process.Process/SendSignal
func (p *Process) Kill(ctx context.Context, sig Signal) error {
	return p.envd.SendSignal(ctx, p.pid, sig)
}

// SendInput writes data to the process's standard input, which must have
// been kept open ([BackgroundOptions.Stdin]).
//
// Operation: POST /process.Process/SendInput
func (p *Process) SendInput(ctx context.Context, data []byte) error {
	return p.envd.SendInput(ctx, p.pid, data)
}

// CloseStdin closes the process's standard input.
//
// Operation: POST /process.Process/CloseStdin
func (p *Process) CloseStdin(ctx context.Context) error {
	return p.envd.CloseStdin(ctx, p.pid)
}

// Close stops consuming the process's output and waits for the consuming
// goroutine to return. It does not signal the process, which keeps running
// in the sandbox; the output already buffered stays readable. Close is
// idempotent and always returns nil.
func (p *Process) Close() error {
	p.cancel()
	<-p.done
	return nil
}

// ringBuffer keeps the last limit bytes written to a stream, addressed by
// absolute offsets: it holds the bytes [end-n, end). Its storage grows on
// demand up to limit bytes and is then reused circularly, so a stream of any
// length costs O(limit) memory and O(1) amortised work per byte.
type ringBuffer struct {
	limit int
	buf   []byte // len(buf) is the current capacity, <= limit
	start int    // index in buf of the oldest byte held
	n     int    // bytes held
	end   int64  // total bytes ever written
}

func (r *ringBuffer) write(p []byte) {
	if len(p) == 0 {
		return
	}
	r.end += int64(len(p))
	if len(p) >= r.limit {
		// Only the tail fits: it replaces everything.
		p = p[len(p)-r.limit:]
		if len(r.buf) < r.limit {
			r.buf = make([]byte, r.limit)
		}
		copy(r.buf, p)
		r.start, r.n = 0, r.limit
		return
	}
	if need := r.n + len(p); need > len(r.buf) && len(r.buf) < r.limit {
		r.grow(min(r.limit, max(need, 2*len(r.buf), 4096)))
	}
	// Drop the oldest bytes that the new ones displace.
	if over := r.n + len(p) - len(r.buf); over > 0 {
		r.start = (r.start + over) % len(r.buf)
		r.n -= over
	}
	pos := (r.start + r.n) % len(r.buf)
	c := copy(r.buf[pos:], p)
	copy(r.buf, p[c:])
	r.n += len(p)
}

// grow moves the held bytes to the front of a buffer of size capacity.
func (r *ringBuffer) grow(capacity int) {
	nb := make([]byte, capacity)
	r.copyOut(nb, 0, r.n)
	r.buf, r.start = nb, 0
}

// copyOut copies n held bytes starting at the i-th held byte into dst.
func (r *ringBuffer) copyOut(dst []byte, i, n int) {
	if n == 0 {
		return
	}
	pos := (r.start + i) % len(r.buf)
	c := copy(dst[:n], r.buf[pos:])
	copy(dst[c:n], r.buf)
}

// clamp moves an offset before the oldest held byte up to it and reports
// whether it did.
func (r *ringBuffer) clamp(off int64) (int64, bool) {
	if oldest := r.end - int64(r.n); off < oldest {
		return oldest, true
	}
	return off, false
}

// read copies n bytes from absolute offset off, which must be held.
func (r *ringBuffer) read(off, n int64) []byte {
	out := make([]byte, n)
	r.copyOut(out, int(off-(r.end-int64(r.n))), int(n))
	return out
}
