package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/sandboxkit/sandboxkit/sandbox"
)

// rawModern is one raw modern request: its JSON-RPC ID, method, params
// (the _meta is added) and the headers that differ from a plain request.
type rawModern struct {
	id     string // JSON
	method string
	params map[string]any
	meta   map[string]any // nil: a complete 2026-07-28 _meta
	header map[string]string
}

func (m rawModern) body() string {
	meta := m.meta
	if meta == nil {
		meta = map[string]any{"io.modelcontextprotocol/protocolVersion": ModernProtocolVersion,
			"io.modelcontextprotocol/clientCapabilities": map[string]any{}}
	}
	params := map[string]any{"_meta": meta}
	for k, v := range m.params {
		params[k] = v
	}
	p, _ := json.Marshal(params)
	return `{"jsonrpc":"2.0","id":` + m.id + `,"method":"` + m.method + `","params":` + string(p) + `}`
}

// post sends m and returns the response's status, Content-Type, session ID
// and body.
func (m rawModern) post(ctx context.Context, t *testing.T, url string) (int, string, string, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+MCPPath, strings.NewReader(m.body()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", ModernProtocolVersion)
	req.Header.Set("Mcp-Method", m.method)
	if name, ok := m.params["name"].(string); ok {
		req.Header.Set("Mcp-Name", name)
	}
	for k, v := range m.header {
		req.Header.Set(k, v)
	}
	resp, err := httpClient(t, nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Mcp-Session-Id"), data
}

// sdkSessions counts the SDK sessions of the server.
func sdkSessions(s *Server) int {
	n := 0
	for range s.mcp.Sessions() {
		n++
	}
	return n
}

// TOOLS-4, TOOLS-6: the fast path answers every request exactly as go-sdk's
// stateless handler does (status, content type, body, no session ID), and
// what it does not serve goes to that handler.
func TestModernFastPathAnswersAsStateless(t *testing.T) {
	h := newHarness(t, nil)
	fast := serveHTTP(t, h, nil)
	stateless := serveHTTP(t, h, &HTTPOptions{statelessOnly: true})
	get := map[string]any{"name": "get_sandbox", "arguments": map[string]any{}}
	for name, m := range map[string]rawModern{
		"tools/list":          {id: "1", method: "tools/list"},
		"no default":          {id: "2", method: "tools/call", params: get},
		"string ID":           {id: `"abc"`, method: "tools/call", params: get},
		"invalid argument":    {id: "3", method: "tools/call", params: map[string]any{"name": "get_sandbox", "arguments": map[string]any{"sandbox_id": 5}}},
		"unknown tool":        {id: "4", method: "tools/call", params: map[string]any{"name": "nope", "arguments": map[string]any{}}},
		"no capabilities":     {id: "5", method: "tools/call", params: get, meta: map[string]any{"io.modelcontextprotocol/protocolVersion": ModernProtocolVersion}},
		"Mcp-Name mismatch":   {id: "6", method: "tools/call", params: get, header: map[string]string{"Mcp-Name": "run_command"}},
		"Mcp-Method mismatch": {id: "7", method: "tools/list", header: map[string]string{"Mcp-Method": "tools/call"}},
		"removed method":      {id: "8", method: "ping"},
		"Accept without SSE":  {id: "9", method: "tools/list", header: map[string]string{"Accept": "application/json"}},
		"_meta version differs": {id: "10", method: "tools/list", meta: map[string]any{"io.modelcontextprotocol/protocolVersion": "2025-11-25",
			"io.modelcontextprotocol/clientCapabilities": map[string]any{}}},
	} {
		ctx := context.Background()
		gs, gct, gsid, got := m.post(ctx, t, fast.URL)
		ws, wct, _, want := m.post(ctx, t, stateless.URL)
		if gs != ws || gct != wct || !bytes.Equal(got, want) {
			t.Errorf("%s: fast path %d %q %.300s\nstateless %d %q %.300s", name, gs, gct, got, ws, wct, want)
		}
		if gsid != "" {
			t.Errorf("%s: an Mcp-Session-Id was minted", name)
		}
	}
	// The fast path did serve: its one long-lived session is the only SDK
	// session left (the stateless handler closes each of its own).
	if n := sdkSessions(h.srv); n != 1 {
		t.Errorf("%d SDK sessions after the requests, want the fast path's one", n)
	}
	if n := h.srv.reg.liveSessions(); n != 0 {
		t.Errorf("%d session records after modern requests, want 0", n)
	}
}

// Clients number their requests alike: concurrent requests with the same
// JSON-RPC ID each get their own answer, under their own ID (run with
// -race).
func TestModernFastPathSameIDs(t *testing.T) {
	h := newHarness(t, nil)
	ts := serveHTTP(t, h, nil)
	c := h.connectModern()
	ids := make([]string, 4)
	for i := range ids {
		ids[i] = c.ok("create_sandbox", nil)["sandbox_id"].(string)
	}
	var wg sync.WaitGroup
	for i := range 32 {
		id := ids[i%len(ids)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := rawModern{id: "1", method: "tools/call", params: map[string]any{"name": "get_sandbox", "arguments": map[string]any{"sandbox_id": id}}}
			_, _, _, data := m.post(context.Background(), t, ts.URL)
			if !bytes.Contains(data, []byte(`"id":1,`)) || !bytes.Contains(data, []byte(id)) {
				t.Errorf("get_sandbox %s answered %.300s", id, data)
			}
		}()
	}
	wg.Wait()
}

// A closed response stream cancels the modern request (streamable-http.mdx,
// "Cancellation"): a command that would run for ten minutes ends when its
// client goes away.
func TestModernFastPathClosedStreamCancels(t *testing.T) {
	h := newHarness(t, nil)
	ts := serveHTTP(t, h, nil)
	id := h.connectModern().ok("create_sandbox", nil)["sandbox_id"].(string)
	h.fp.Journal().Reset()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		m := rawModern{id: "1", method: "tools/call", params: map[string]any{"name": "run_command",
			"arguments": map[string]any{"sandbox_id": id, "command": "sleep infinity", "timeout": 600}}}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+MCPPath, strings.NewReader(m.body()))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", ModernProtocolVersion)
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "run_command")
		if resp, err := httpClient(t, nil).Do(req); err == nil {
			_ = resp.Body.Close()
		}
	}()
	waitFor(t, "the command to start", func() bool { return h.fp.Journal().Count(sandbox.OpProcessStart) > 0 })
	if strings.Contains(h.logs.String(), `"tool":"run_command"`) {
		t.Fatal("run_command ended before its client went away")
	}
	cancel()
	<-done
	waitFor(t, "run_command to end", func() bool { return strings.Contains(h.logs.String(), `"tool":"run_command"`) })
}
