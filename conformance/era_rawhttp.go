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
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if r, ok := msg.(*jsonrpc.Request); ok {
		var p struct {
			Meta map[string]any `json:"_meta"`
		}
		_ = json.Unmarshal(r.Params, &p)
		if v, _ := p.Meta["io.modelcontextprotocol/protocolVersion"].(string); v != "" {
			req.Header.Set("MCP-Protocol-Version", v)
			req.Header.Set("Mcp-Method", r.Method)
		}
	}
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
	return c.readAnswers(resp)
}

// readAnswers queues the messages of one response body.
func (c *postConnection) readAnswers(resp *http.Response) error {
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		body, err := io.ReadAll(resp.Body)
		if err != nil || len(bytes.TrimSpace(body)) == 0 {
			return err
		}
		return c.enqueue(body)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data:"); ok {
			if err := c.enqueue([]byte(strings.TrimSpace(data))); err != nil {
				return err
			}
		}
	}
	return sc.Err()
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
