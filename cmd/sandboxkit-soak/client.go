package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
)

// protocolVersion is the MCP version the soak's clients speak.
const protocolVersion = "2025-11-25"

// mcpClient is a minimal Streamable HTTP client of one MCP session: plain
// POSTs with JSON-RPC bodies, answers read from SSE or JSON. It opens no
// standalone event stream, so a session it stops using really is idle, and
// it sends DELETE only when told to, so that every way of ending a session
// can be chosen.
type mcpClient struct {
	hc        *http.Client
	endpoint  string
	sessionID string
	nextID    int
}

// rpcError is a JSON-RPC error answer.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("json-rpc error %d: %s", e.Code, e.Message) }

// httpStatusError is a non-2xx answer.
type httpStatusError struct{ status int }

func (e *httpStatusError) Error() string { return fmt.Sprintf("http %d", e.status) }

// initialize opens the session.
func (c *mcpClient) initialize(ctx context.Context) error {
	_, err := c.call(ctx, "initialize", map[string]any{
		"protocolVersion": protocolVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "sandboxkit-soak", "version": "0"},
	})
	if err != nil {
		return err
	}
	if c.sessionID == "" {
		return errors.New("initialize: no Mcp-Session-Id")
	}
	return c.notify(ctx, "notifications/initialized")
}

// callTool calls a tool and returns its result.
func (c *mcpClient) callTool(ctx context.Context, name string, args any) (*toolResult, error) {
	raw, err := c.call(ctx, "tools/call", map[string]any{"name": name, "arguments": args})
	if err != nil {
		return nil, err
	}
	var res toolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("tools/call result: %w", err)
	}
	return &res, nil
}

// toolResult is the part of a CallToolResult the soak reads.
type toolResult struct {
	IsError           bool            `json:"isError"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	Content           []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

// category returns a failed result's error category, read from the JSON of
// its text block (ERR-2: a tool error carries no structuredContent).
func (r *toolResult) category() string {
	var env struct {
		Error struct {
			Category string `json:"category"`
		} `json:"error"`
	}
	for _, c := range r.Content {
		if c.Type == "text" && json.Unmarshal([]byte(c.Text), &env) == nil && env.Error.Category != "" {
			return env.Error.Category
		}
	}
	return ""
}

// field returns a string member of a successful result.
func (r *toolResult) field(name string) string {
	var m map[string]any
	_ = json.Unmarshal(r.StructuredContent, &m)
	s, _ := m[name].(string)
	return s
}

// delete ends the session.
func (c *mcpClient) delete(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, c.endpoint, nil)
	if err != nil {
		return err
	}
	c.headers(req)
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode >= 300 && resp.StatusCode != http.StatusNotFound {
		return &httpStatusError{resp.StatusCode}
	}
	return nil
}

func (c *mcpClient) headers(req *http.Request) {
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.sessionID != "" {
		req.Header.Set("Mcp-Session-Id", c.sessionID)
		req.Header.Set("Mcp-Protocol-Version", protocolVersion)
	}
}

func (c *mcpClient) notify(ctx context.Context, method string) error {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method})
	resp, err := c.post(ctx, body)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return &httpStatusError{resp.StatusCode}
	}
	return nil
}

func (c *mcpClient) post(ctx context.Context, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	c.headers(req)
	return c.hc.Do(req)
}

// call sends one request and returns its result.
func (c *mcpClient) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	c.nextID++
	id := c.nextID
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	resp, err := c.post(ctx, body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil, &httpStatusError{resp.StatusCode}
	}
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" && c.sessionID == "" {
		c.sessionID = sid
	}
	var msg struct {
		ID     int             `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt == "application/json" {
		if err := json.NewDecoder(resp.Body).Decode(&msg); err != nil {
			return nil, err
		}
	} else if err := readSSE(resp.Body, id, &msg); err != nil {
		return nil, err
	}
	if msg.Error != nil {
		return nil, msg.Error
	}
	return msg.Result, nil
}

// readSSE reads server-sent events until the JSON-RPC response with id.
func readSSE(r io.Reader, id int, out any) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	var data strings.Builder
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "data:"):
			data.WriteString(strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		case line == "" && data.Len() > 0:
			var probe struct {
				ID *int `json:"id"`
			}
			text := data.String()
			data.Reset()
			if json.Unmarshal([]byte(text), &probe) == nil && probe.ID != nil && *probe.ID == id {
				return json.Unmarshal([]byte(text), out)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return io.ErrUnexpectedEOF
}
