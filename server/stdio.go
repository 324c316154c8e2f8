package server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lineTransport is the stdio transport: newline-delimited JSON-RPC on a
// reader and a writer, like the SDK's StdioTransport, but it survives bad
// input. Each line is validated strictly ([checkFrame]); a line that is
// not a valid message is answered with a parse error (-32700) or an
// invalid-request error (-32600), under id null when its id cannot be read,
// and reading goes on. A line longer than maxLine is skipped to its end and
// answered with -32600. At end of input, reading ends only once every
// request already handed to the SDK has been answered, so that requests
// written just before end of input are answered before the session's
// cleanup runs.
type lineTransport struct {
	r       io.Reader
	w       io.Writer
	maxLine int
	// stash, when set, holds the arguments of a large tools/call while it
	// is in flight, so that the SDK decodes an envelope of a few hundred
	// bytes instead of megabytes, twice (see argStash).
	stash *argStash
}

// Connect implements mcp.Transport.
func (t *lineTransport) Connect(context.Context) (mcp.Connection, error) {
	c := &lineConn{
		in:       bufio.NewReaderSize(t.r, 64<<10),
		w:        t.w,
		maxLine:  t.maxLine,
		stash:    t.stash,
		pending:  map[string]string{},
		closed:   make(chan struct{}),
		idle:     make(chan struct{}, 1),
		incoming: make(chan lineRead),
	}
	// Reading blocks (on stdin, without a deadline): it runs on its own,
	// so that Close can end Read at once, as the SDK's jsonrpc2 expects.
	go c.readLoop()
	return c, nil
}

// lineRead is one line read, or the error that ended reading.
type lineRead struct {
	line []byte
	err  error
}

// readLoop reads lines until an error other than a long line, handing
// each to Read.
func (c *lineConn) readLoop() {
	for {
		line, err := c.readLine()
		select {
		case c.incoming <- lineRead{line, err}:
		case <-c.closed:
			return
		}
		if err != nil && !errors.Is(err, errLineTooLong) {
			return
		}
	}
}

// lineConn is one stdio connection. Read is called by one goroutine of the
// SDK; Write by many.
type lineConn struct {
	in       *bufio.Reader // read by readLoop only
	maxLine  int
	incoming chan lineRead

	wmu sync.Mutex
	w   io.Writer

	stash *argStash // nil: arguments stay in the message

	mu      sync.Mutex
	pending map[string]string // raw ids of calls handed to the SDK, unanswered: their stash token or ""
	idle    chan struct{}     // signalled when pending may have emptied

	closeOnce sync.Once
	closed    chan struct{}
}

// SessionID implements mcp.Connection: stdio sessions have none.
func (c *lineConn) SessionID() string { return "" }

// errLineTooLong marks a line skipped for its length.
var errLineTooLong = errors.New("line too long")

// readLine returns the next line without its newline. A line longer than
// maxLine is consumed to its end and reported as errLineTooLong. A long
// line is kept as copies of the reader's chunks and joined once at its end,
// into a slice of exactly its length: growing one slice chunk by chunk
// copied an 11 MB upload line about five times over.
func (c *lineConn) readLine() ([]byte, error) {
	var parts [][]byte
	total := 0
	for {
		chunk, err := c.in.ReadSlice('\n')
		if total+len(chunk) > c.maxLine+1 {
			// Skip the rest of the line without keeping it.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = c.in.ReadSlice('\n')
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, err
			}
			return nil, errLineTooLong
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			parts = append(parts, bytes.Clone(chunk))
			total += len(chunk)
			continue
		case err != nil && !(errors.Is(err, io.EOF) && total+len(chunk) > 0):
			return nil, err
		}
		line := make([]byte, 0, total+len(chunk))
		for _, p := range parts {
			line = append(line, p...)
		}
		line = append(line, chunk...)
		if err != nil {
			return line, nil // a last line without its newline
		}
		return bytes.TrimRight(line, "\r\n"), nil
	}
}

// Read implements mcp.Connection.
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var r lineRead
		select {
		case r = <-c.incoming:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.closed:
			return nil, io.EOF
		}
		line, err := r.line, r.err
		if errors.Is(err, errLineTooLong) {
			c.refuse(&frameError{code: jsonrpc.CodeInvalidRequest,
				msg: fmt.Sprintf("invalid request: message longer than %d bytes", c.maxLine)})
			continue
		}
		if err != nil {
			c.drain(ctx)
			return nil, err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		f, ferr := checkFrame(line)
		if ferr != nil {
			c.refuse(ferr)
			continue
		}
		// A request is built from what checkFrame read, not decoded again.
		var msg jsonrpc.Message
		tok := ""
		if req, ok := request(line, f); ok {
			tok = c.stashArguments(req, line, f)
			msg = req
		} else if msg, err = jsonrpc.DecodeMessage(line); err != nil {
			c.refuse(&frameError{id: f.id, code: jsonrpc.CodeInvalidRequest, msg: "invalid request"})
			continue
		}
		if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
			c.mu.Lock()
			c.pending[idKey(req.ID)] = tok
			c.mu.Unlock()
		}
		return msg, nil
	}
}

// stashArguments moves the arguments of a large tools/call call into the
// stash and gives the SDK params that name them by token instead; the tool
// handler takes them back (Server.toolHandler). It returns the token, or ""
// when the arguments stay in the message: no stash, not a tools/call call,
// arguments under stashMinBytes, or an ID already in flight (whose token
// would be dropped by the other call's answer).
func (c *lineConn) stashArguments(req *jsonrpc.Request, line []byte, f *frame) string {
	if c.stash == nil || !req.IsCall() || f.method != methodCallTool || f.argEnd-f.argStart < stashMinBytes {
		return ""
	}
	c.mu.Lock()
	_, dup := c.pending[idKey(req.ID)]
	c.mu.Unlock()
	if dup {
		return ""
	}
	tok := c.stash.put("", line[f.argStart:f.argEnd]) // stdio sessions have no ID
	ref := `{"` + stashKey + `":"` + tok + `"}`
	params := make([]byte, 0, f.paramsEnd-f.paramsStart-(f.argEnd-f.argStart)+len(ref))
	params = append(params, line[f.paramsStart:f.argStart]...)
	params = append(params, ref...)
	params = append(params, line[f.argEnd:f.paramsEnd]...)
	req.Params = params
	return tok
}

// drain waits, at end of input, until every call handed to the SDK has
// been answered, the connection is closed, or ctx ends.
func (c *lineConn) drain(ctx context.Context) {
	for {
		c.mu.Lock()
		n := len(c.pending)
		c.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-c.idle:
		case <-c.closed:
			return
		case <-ctx.Done():
			return
		}
	}
}

// refuse answers a line that was not dispatched.
func (c *lineConn) refuse(e *frameError) {
	_ = c.writeLine(e.response())
}

// writeLine writes one message and its newline, whole.
func (c *lineConn) writeLine(data []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	select {
	case <-c.closed:
		return errors.New("connection closed")
	default:
	}
	if _, err := c.w.Write(append(data, '\n')); err != nil {
		return fmt.Errorf("stdio write: %w", err)
	}
	return nil
}

// Write implements mcp.Connection.
func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("stdio encode: %w", err)
	}
	err = c.writeLine(data)
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		key := idKey(resp.ID)
		tok, held := c.pending[key]
		delete(c.pending, key)
		c.mu.Unlock()
		if held && tok != "" {
			c.stash.drop(tok) // the call ended without its handler taking them
		}
		select {
		case c.idle <- struct{}{}:
		default:
		}
	}
	return err
}

// Close implements mcp.Connection.
func (c *lineConn) Close() error {
	c.closeOnce.Do(func() {
		c.wmu.Lock()
		close(c.closed)
		c.wmu.Unlock()
		c.mu.Lock()
		for _, tok := range c.pending {
			if tok != "" {
				c.stash.drop(tok)
			}
		}
		c.mu.Unlock()
	})
	return nil
}

// idKey identifies a request id in the pending set.
func idKey(id jsonrpc.ID) string { return fmt.Sprintf("%T:%v", id.Raw(), id.Raw()) }
