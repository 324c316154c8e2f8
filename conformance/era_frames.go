package conformance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// The message-strictness specs (WIRE-*) send bytes no SDK client sends: a
// frameConn carries each as one message, on a session already initialized,
// and reads back every answer as raw JSON.

// frameConn is one initialized session the kit writes raw messages to.
type frameConn interface {
	// send writes frame as one message (a stdio line, one POST body).
	send(ctx context.Context, frame []byte) error
	// next returns the next answer the server wrote, in order.
	next(ctx context.Context) (wireAnswer, error)
	close() error
}

// namedFrameConn is a frame connection and the transport it is on, for
// failure messages.
type namedFrameConn struct {
	transport string
	conn      frameConn
}

// frameTarget is a target the kit can open frame connections to, one per
// transport it reaches the server by.
type frameTarget interface {
	frameConns(ctx context.Context) ([]namedFrameConn, error)
}

// wireAnswer is one JSON-RPC answer as written: its raw id (nil when
// absent) and its error, if any.
type wireAnswer struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code int64 `json:"code"`
	} `json:"error"`
	raw string
}

// idIs reports whether the answer's id is exactly raw (as JSON text);
// "null" also matches an absent id.
func (a wireAnswer) idIs(raw string) bool {
	got := string(bytes.TrimSpace(a.ID))
	if got == "" {
		got = "null"
	}
	return got == raw
}

func decodeAnswer(data []byte) (wireAnswer, error) {
	var a wireAnswer
	if err := json.Unmarshal(data, &a); err != nil {
		return a, fmt.Errorf("an answer that is not a JSON object (%q): %w", truncate(string(data), 200), err)
	}
	a.raw = string(data)
	return a, nil
}

// initializeFrame is the initialize request every frame connection opens
// its session with (id 0).
func initializeFrame() []byte {
	return []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + ProtocolVersion +
		`","capabilities":{},"clientInfo":{"name":"sandboxkit-conformance","version":"` + Version + `"}}}`)
}

const initializedFrame = `{"jsonrpc":"2.0","method":"notifications/initialized"}`

// initializeFrames opens c's session: initialize, its answer, initialized.
func initializeFrames(ctx context.Context, c frameConn) error {
	if err := c.send(ctx, initializeFrame()); err != nil {
		return err
	}
	a, err := c.next(ctx)
	if err != nil {
		return fmt.Errorf("read the answer to initialize: %w", err)
	}
	if a.Error != nil || !a.idIs("0") {
		return fmt.Errorf("initialize was not answered with a result: %s", truncate(a.raw, 300))
	}
	return c.send(ctx, []byte(initializedFrame))
}

// lineFrames is a frame connection of newline-delimited messages: a stdio
// server's stdin and stdout, or the in-process server's pipe.
type lineFrames struct {
	w       io.WriteCloser
	answers chan []byte
	ended   chan error
}

func newLineFrames(r io.Reader, w io.WriteCloser) *lineFrames {
	c := &lineFrames{w: w, answers: make(chan []byte, 64), ended: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 64<<20)
		for sc.Scan() {
			if line := bytes.TrimSpace(sc.Bytes()); len(line) > 0 {
				c.answers <- bytes.Clone(line)
			}
		}
		c.ended <- fmt.Errorf("the server's output ended: %v", sc.Err())
	}()
	return c
}

func (c *lineFrames) send(_ context.Context, frame []byte) error {
	if _, err := c.w.Write(append(bytes.Clone(frame), '\n')); err != nil {
		return fmt.Errorf("write a line: %w", err)
	}
	return nil
}

func (c *lineFrames) next(ctx context.Context) (wireAnswer, error) {
	select {
	case data := <-c.answers:
		return decodeAnswer(data)
	case err := <-c.ended:
		c.ended <- err
		return wireAnswer{}, err
	case <-ctx.Done():
		return wireAnswer{}, ctx.Err()
	}
}

func (c *lineFrames) close() error { return c.w.Close() }

// postFrames is a frame connection of one POST per message to a Streamable
// HTTP endpoint, carrying the session the initialize answer named.
type postFrames struct {
	conn    *postConnection
	answers chan []byte
}

func newPostFrames(url string, hc *http.Client) *postFrames {
	return &postFrames{conn: &postConnection{url: url, hc: hc}, answers: make(chan []byte, 64)}
}

// send posts frame; a refusal may come as the JSON body of a 400.
func (c *postFrames) send(ctx context.Context, frame []byte) error {
	extra := http.Header{}
	c.conn.mu.Lock()
	if c.conn.session != "" {
		extra.Set("MCP-Protocol-Version", ProtocolVersion)
	}
	c.conn.mu.Unlock()
	return c.conn.post(ctx, frame, extra, func(data []byte) error {
		c.answers <- bytes.Clone(data)
		return nil
	})
}

func (c *postFrames) next(ctx context.Context) (wireAnswer, error) {
	select {
	case data := <-c.answers:
		return decodeAnswer(data)
	case <-ctx.Done():
		return wireAnswer{}, fmt.Errorf("no answer: %w", ctx.Err())
	}
}

func (c *postFrames) close() error { return nil }

func (t *inProcessTarget) frameConns(ctx context.Context) ([]namedFrameConn, error) {
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	go func() {
		_ = t.srv.RunLines(t.ctx, sr, sw)
		_ = sw.Close()
	}()
	url, hc, err := t.endpoint(ctx)
	if err != nil {
		return nil, err
	}
	return []namedFrameConn{
		{"stdio transport, in process", newLineFrames(cr, cw)},
		{"Streamable HTTP", newPostFrames(url, hc)},
	}, nil
}

func (t *stdioTarget) frameConns(context.Context) ([]namedFrameConn, error) {
	out, in, err := t.newTransport(t.command()).start()
	if err != nil {
		return nil, fmt.Errorf("start the server command: %w", err)
	}
	return []namedFrameConn{{"stdio", newLineFrames(out, in)}}, nil
}

func (t *httpTarget) frameConns(ctx context.Context) ([]namedFrameConn, error) {
	url, hc, err := t.endpoint(ctx)
	if err != nil {
		return nil, err
	}
	return []namedFrameConn{{"Streamable HTTP", newPostFrames(url, hc)}}, nil
}
