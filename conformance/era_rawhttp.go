package conformance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawConnection gives the protocol specs a raw JSON-RPC connection to a
// Streamable HTTP server: each message is one POST, and each answer (a
// JSON body or the data lines of an SSE stream) is read back in order.
func (t *httpTarget) rawConnection(context.Context) (mcp.Connection, error) {
	hc := &http.Client{Transport: headerTransport{headers: t.cfg.Headers, base: http.DefaultTransport}}
	return &postConnection{url: t.cfg.ServerURL, hc: hc, queue: make(chan jsonrpc.Message, 16)}, nil
}

// postConnection is a JSON-RPC connection of one POST per message.
type postConnection struct {
	url   string
	hc    *http.Client
	queue chan jsonrpc.Message

	mu      sync.Mutex
	session string
}

func (c *postConnection) SessionID() string { return "" }

// Write posts msg; a request at a modern version carries it in the
// MCP-Protocol-Version header too (TOOLS-4), a legacy one its session.
func (c *postConnection) Write(ctx context.Context, msg jsonrpc.Message) error {
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	extra := http.Header{}
	if r, ok := msg.(*jsonrpc.Request); ok {
		var p struct {
			Meta map[string]any `json:"_meta"`
		}
		_ = json.Unmarshal(r.Params, &p)
		if v, _ := p.Meta["io.modelcontextprotocol/protocolVersion"].(string); v != "" {
			extra.Set("MCP-Protocol-Version", v)
			extra.Set("Mcp-Method", r.Method)
		}
	}
	return c.post(ctx, data, extra, c.enqueue)
}

// post sends data as one POST with extra headers and the session, keeps
// the session the answer names, and hands each message of the answer to
// each.
func (c *postConnection) post(ctx context.Context, data []byte, extra http.Header, each func([]byte) error) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("request: %w", err)
	}
	req.Header = extra.Clone()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	c.mu.Lock()
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	c.mu.Unlock()
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("post: %w", err)
	}
	defer resp.Body.Close()
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		c.mu.Lock()
		c.session = id
		c.mu.Unlock()
	}
	return eachAnswer(resp, each)
}

// eachAnswer calls fn with each message of one response body: a JSON body
// (of any status) or the data lines of an SSE stream.
func eachAnswer(resp *http.Response, fn func([]byte) error) error {
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return fmt.Errorf("read the answer: %w", err)
		}
		if body = bytes.TrimSpace(body); len(body) == 0 {
			return nil
		}
		return fn(body)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data:"); ok && strings.TrimSpace(data) != "" {
			if err := fn([]byte(strings.TrimSpace(data))); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read the answer stream: %w", err)
	}
	return nil
}

func (c *postConnection) enqueue(data []byte) error {
	msg, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		return fmt.Errorf("decode an answer: %w", err)
	}
	c.queue <- msg
	return nil
}

// Read returns the next queued answer.
func (c *postConnection) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case msg := <-c.queue:
		return msg, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close ends nothing: each message was its own request.
func (c *postConnection) Close() error { return nil }
