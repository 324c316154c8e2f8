package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`

// rawPost sends one JSON-RPC message to MCPPath and returns the response
// with its body read.
func rawPost(t *testing.T, hc *http.Client, base, sessionID string, body io.Reader, header http.Header) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+MCPPath, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sessionID != "" {
		req.Header.Set("Mcp-Session-Id", sessionID)
		req.Header.Set("Mcp-Protocol-Version", testProtocolVersion)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, data
}

// rawSession opens a session with raw requests and returns its ID.
func rawSession(t *testing.T, hc *http.Client, base string) string {
	t.Helper()
	resp, body := rawPost(t, hc, base, "", strings.NewReader(initializeBody), nil)
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	resp, body = rawPost(t, hc, base, id, strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), nil)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", resp.StatusCode, body)
	}
	return id
}

// rawDelete ends a session.
func rawDelete(t *testing.T, hc *http.Client, base, id string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, base+MCPPath, nil)
	req.Header.Set("Mcp-Session-Id", id)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

// liveHTTP is the number of live HTTP sessions the caps count.
func (h *harness) liveHTTP() int {
	return h.srv.reg.http.liveCount()
}

// TestHostileOrigin: a browser page on another origin cannot reach the
// server, with or without a token.
func TestHostileOrigin(t *testing.T) {
	h := newHarness(t, nil)
	ts := serveHTTP(t, h, nil)
	hc := httpClient(t, nil)
	for _, tc := range []struct {
		name   string
		header http.Header
		want   int
	}{
		{"cross-site fetch", http.Header{"Sec-Fetch-Site": {"cross-site"}}, http.StatusForbidden},
		{"foreign Origin", http.Header{"Origin": {"https://evil.example"}}, http.StatusForbidden},
		{"foreign Origin on the same host name", http.Header{"Origin": {"http://127.0.0.1:1"}}, http.StatusForbidden},
		{"same origin", http.Header{"Origin": {ts.URL}}, http.StatusOK},
		{"no Origin (not a browser)", nil, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := rawPost(t, hc, ts.URL, "", strings.NewReader(initializeBody), tc.header)
			if resp.StatusCode != tc.want {
				t.Errorf("status %d, want %d: %s", resp.StatusCode, tc.want, body)
			}
			if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
				rawDelete(t, hc, ts.URL, id)
			}
		})
	}
}

// TestHostileBodies: bodies over the limit are refused with 413, whether
// declared, chunked, or on an existing session (which stays usable), and a
// body that is not JSON-RPC is refused without harm.
func TestHostileBodies(t *testing.T) {
	h := newHarness(t, nil)
	ts := serveHTTP(t, h, &HTTPOptions{MaxRequestBodyBytes: 4096})
	hc := httpClient(t, nil)
	big := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"x":"` + strings.Repeat("a", 8192) + `"}}`
	t.Run("declared length", func(t *testing.T) {
		if resp, _ := rawPost(t, hc, ts.URL, "", strings.NewReader(big), nil); resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("status %d, want 413", resp.StatusCode)
		}
	})
	t.Run("chunked", func(t *testing.T) {
		// A reader of unknown length is sent chunked.
		if resp, _ := rawPost(t, hc, ts.URL, "", io.MultiReader(strings.NewReader(big)), nil); resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("status %d, want 413", resp.StatusCode)
		}
	})
	id := rawSession(t, hc, ts.URL)
	t.Run("on a session", func(t *testing.T) {
		call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"a","content":"` + strings.Repeat("a", 8192) + `"}}}`
		if resp, _ := rawPost(t, hc, ts.URL, id, strings.NewReader(call), nil); resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("status %d, want 413", resp.StatusCode)
		}
	})
	t.Run("not JSON-RPC", func(t *testing.T) {
		for _, body := range []string{"\x00\xff garbage", `{"jsonrpc":"2.0","id":`, `[]`, `{"jsonrpc":"1.0"}`} {
			resp, data := rawPost(t, hc, ts.URL, id, strings.NewReader(body), nil)
			if resp.StatusCode < 400 || resp.StatusCode >= 500 {
				t.Errorf("%q: status %d %s", body, resp.StatusCode, data)
			}
		}
	})
	t.Run("the session still works", func(t *testing.T) {
		resp, body := rawPost(t, hc, ts.URL, id, strings.NewReader(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_sandboxes","arguments":{}}}`), nil)
		if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"sandboxes"`)) {
			t.Errorf("status %d: %s", resp.StatusCode, body)
		}
	})
	rawDelete(t, hc, ts.URL, id)
}

// TestSessionCaps: one client cannot open more than MaxSessionsPerClient
// sessions, nor all clients together more than MaxSessions; the refusal
// says which cap and what to do, and a session that ends (DELETE, idle
// timeout) frees its slot.
func TestSessionCaps(t *testing.T) {
	h := newHarness(t, nil)
	hc := httpClient(t, nil)
	t.Run("per client", func(t *testing.T) {
		ts := serveHTTP(t, h, &HTTPOptions{MaxSessionsPerClient: 2})
		a := connectHTTP(t, h, ts.URL, hc)
		b := connectHTTP(t, h, ts.URL, hc)
		a.ok("list_sandboxes", nil)
		resp, body := rawPost(t, hc, ts.URL, "", strings.NewReader(initializeBody), nil)
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
			t.Errorf("status %d, want 429 with Retry-After", resp.StatusCode)
		}
		var rpc struct {
			Error struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(body, &rpc); err != nil || !strings.Contains(rpc.Error.Message, "too many live sessions from this client (limit 2)") {
			t.Errorf("refusal %s", body)
		}
		// An MCP client sees the refusal at connect.
		cl := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil)
		if _, err := cl.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL + MCPPath, HTTPClient: hc, MaxRetries: -1},
			&mcp.ClientSessionOptions{ProtocolVersion: testProtocolVersion}); err == nil || !strings.Contains(err.Error(), "Too Many Requests") {
			t.Errorf("connect beyond the cap: %v", err)
		}
		// Modern requests have no session and count against no cap.
		connectModernHTTP(t, h, ts.URL, hc).ok("list_sandboxes", nil)
		if err := b.cs.Close(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the closed session's slot freed", func() bool { return h.liveHTTP() == 1 })
		c := connectHTTP(t, h, ts.URL, hc)
		c.ok("list_sandboxes", nil)
		_ = a.cs.Close()
		_ = c.cs.Close()
		waitFor(t, "every slot freed", func() bool { return h.liveHTTP() == 0 })
	})
	t.Run("server", func(t *testing.T) {
		ts := serveHTTP(t, h, &HTTPOptions{MaxSessions: 1})
		id := rawSession(t, hc, ts.URL)
		resp, body := rawPost(t, hc, ts.URL, "", strings.NewReader(initializeBody), nil)
		if resp.StatusCode != http.StatusServiceUnavailable || !bytes.Contains(body, []byte("too many live sessions on this server (limit 1)")) {
			t.Errorf("status %d %s, want 503", resp.StatusCode, body)
		}
		rawDelete(t, hc, ts.URL, id)
		waitFor(t, "slot freed", func() bool { return h.liveHTTP() == 0 })
		rawDelete(t, hc, ts.URL, rawSession(t, hc, ts.URL))
	})
	t.Run("idle sessions free their slots", func(t *testing.T) {
		ts := serveHTTP(t, h, &HTTPOptions{MaxSessionsPerClient: 1, SessionTimeout: 200 * time.Millisecond})
		rawSession(t, hc, ts.URL)
		waitFor(t, "idle session expired", func() bool { return h.liveHTTP() == 0 })
		rawDelete(t, hc, ts.URL, rawSession(t, hc, ts.URL))
	})
	t.Run("concurrent opens never exceed the cap", func(t *testing.T) {
		ts := serveHTTP(t, h, &HTTPOptions{MaxSessionsPerClient: 3})
		var mu sync.Mutex
		var ids []string
		var wg sync.WaitGroup
		for range 12 {
			wg.Go(func() {
				req, _ := http.NewRequest(http.MethodPost, ts.URL+MCPPath, strings.NewReader(initializeBody))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				resp, err := hc.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if id := resp.Header.Get("Mcp-Session-Id"); resp.StatusCode == http.StatusOK && id != "" {
					mu.Lock()
					ids = append(ids, id)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(ids) != 3 {
			t.Errorf("%d sessions opened, want the cap 3", len(ids))
		}
		for _, id := range ids {
			rawDelete(t, hc, ts.URL, id)
		}
		waitFor(t, "every slot freed", func() bool { return h.liveHTTP() == 0 })
	})
}

// slowServer serves the harness's server with HTTPServer's connection
// bounds, and reports each connection that the server closes.
func slowServer(t *testing.T, h *harness, opts *HTTPOptions) (*httptest.Server, <-chan string) {
	hs := h.srv.HTTPServer(opts)
	ts := httptest.NewUnstartedServer(hs.Handler)
	ts.Config.ReadHeaderTimeout = hs.ReadHeaderTimeout
	ts.Config.IdleTimeout = hs.IdleTimeout
	ts.Config.MaxHeaderBytes = hs.MaxHeaderBytes
	closed := make(chan string, 100)
	ts.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			// A small send buffer, so that a client that stops reading
			// stalls the server's writes after a little data.
			_ = c.(*net.TCPConn).SetWriteBuffer(16 << 10)
		}
		if s == http.StateClosed {
			select {
			case closed <- c.RemoteAddr().String():
			default:
			}
		}
	}
	ts.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = h.srv.Shutdown(ctx)
		ts.Close()
	})
	return ts, closed
}

// waitClosed waits until the server closes the connection whose client end
// is conn.
func waitClosed(t *testing.T, closed <-chan string, conn net.Conn) {
	t.Helper()
	want := conn.LocalAddr().String()
	timeout := time.After(hangGuard)
	for {
		select {
		case got := <-closed:
			if got == want {
				return
			}
		case <-timeout:
			t.Fatal("the server never closed the slow connection")
		}
	}
}

// TestSlowClients: a client that trickles its headers or body, or stops
// reading a response, is cut off by the read and write timeouts; its
// session, and the server, are unaffected.
func TestSlowClients(t *testing.T) {
	h := newHarness(t, nil)
	ts, closed := slowServer(t, h, &HTTPOptions{ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond})
	addr := strings.TrimPrefix(ts.URL, "http://")
	hc := httpClient(t, nil)
	dial := func() net.Conn {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}

	t.Run("headers never finish", func(t *testing.T) {
		conn := dial()
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n", MCPPath, addr)
		waitClosed(t, closed, conn)
	})
	t.Run("body never finishes", func(t *testing.T) {
		conn := dial()
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\":", MCPPath, addr)
		waitClosed(t, closed, conn)
	})

	// A session with a 1 MiB file, whose download answer is some 2.8 MB:
	// far more than the server's socket buffer (shrunk to 16 KiB) and the
	// stalled client's (shrunk to 4 KiB) can hold.
	owner := connectHTTP(t, h, ts.URL, hc)
	id := owner.ok("create_sandbox", nil)["sandbox_id"].(string)
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<20/16)
	sb, err := h.srv.deps.Platform.Connect(context.Background(), id, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sb.Envd(nil).Upload(context.Background(), "big.bin", bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}

	t.Run("reader stops reading", func(t *testing.T) {
		sid := rawSession(t, hc, ts.URL)
		conn := dial()
		if err := conn.(*net.TCPConn).SetReadBuffer(4096); err != nil {
			t.Fatal(err)
		}
		call := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"download_file","arguments":{"sandbox_id":%q,"path":"big.bin"}}}`, id)
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
			"Mcp-Session-Id: %s\r\nMcp-Protocol-Version: %s\r\nContent-Length: %d\r\n\r\n%s", MCPPath, addr, sid, testProtocolVersion, len(call), call)
		// Read the status line only, then stop reading.
		if line, err := bufio.NewReader(conn).ReadString('\n'); err != nil || !strings.Contains(line, "200") {
			t.Fatalf("status line %q: %v", line, err)
		}
		waitClosed(t, closed, conn)
		// The session survives its stalled connection.
		resp, body := rawPost(t, hc, ts.URL, sid, strings.NewReader(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"list_sandboxes","arguments":{}}}`), nil)
		if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"sandboxes"`)) {
			t.Errorf("session after the stall: %d %s", resp.StatusCode, body)
		}
		rawDelete(t, hc, ts.URL, sid)
	})
	t.Run("a reader that keeps up gets the whole answer", func(t *testing.T) {
		// Each write has its own deadline: the answer may take longer
		// than WriteTimeout, but no single write does.
		sid := rawSession(t, hc, ts.URL)
		call := fmt.Sprintf(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"download_file","arguments":{"sandbox_id":%q,"path":"big.bin"}}}`, id)
		resp, body := rawPost(t, hc, ts.URL, sid, strings.NewReader(call), nil)
		// The bytes travel once, in structuredContent (TOOLS-3).
		if resp.StatusCode != http.StatusOK || len(body) < base64.StdEncoding.EncodedLen(len(data)) || !bytes.Contains(body, []byte(`"size":1048576`)) {
			t.Errorf("status %d, %d bytes", resp.StatusCode, len(body))
		}
		rawDelete(t, hc, ts.URL, sid)
	})
	_ = owner.cs.Close()
}
