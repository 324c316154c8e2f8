package server

import (
	"context"
	"encoding/base64"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// An inline download's bytes travel once (TOOLS-3, BIN-2): in
// structuredContent, while the text block holds the rest of the result;
// a 2025-03-26 client, which reads only the text block, gets them there.
func TestDownloadEncodedOnce(t *testing.T) {
	h := newHarness(t, nil)
	payload := []byte("\x00\x01binary\xff")
	want := base64.StdEncoding.EncodeToString(payload)
	for _, tc := range []struct {
		era      string
		connect  func() *client
		textData bool
	}{
		{"2025-11-25", h.connect, false},
		{"2026-07-28", h.connectModern, false},
		{"2025-03-26", func() *client { return h.connectVersion("2025-03-26") }, true},
	} {
		t.Run(tc.era, func(t *testing.T) {
			c := tc.connect()
			id := c.ok("create_sandbox", nil)["sandbox_id"].(string)
			c.ok("upload_file", map[string]any{"sandbox_id": id, "path": "/tmp/b", "data_base64": want})
			res := c.call("download_file", map[string]any{"sandbox_id": id, "path": "/tmp/b"})
			out := c.success("download_file", nil, res)
			if out["data_base64"] != want {
				t.Fatalf("structuredContent data_base64 %v, want %q", out["data_base64"], want)
			}
			text := res.Content[0].(*mcp.TextContent).Text
			if got := strings.Count(text, want); (got == 1) != tc.textData || got > 1 {
				t.Errorf("the text block holds the bytes %d times, want %v: %s", got, tc.textData, text)
			}
			if !strings.Contains(text, `"sha256":"`) || !strings.Contains(text, `"size":`+strconv.Itoa(len(payload))) {
				t.Errorf("the text block lacks the rest of the result: %s", text)
			}
		})
	}
}

// connectVersion opens a legacy session at one protocol version.
func (h *harness) connectVersion(version string) *client {
	h.t.Helper()
	ctx := context.Background()
	serverEnd, clientEnd := net.Pipe()
	ss, err := h.srv.mcp.Connect(ctx, &mcp.IOTransport{Reader: serverEnd, Writer: serverEnd}, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil).Connect(ctx,
		&mcp.IOTransport{Reader: clientEnd, Writer: clientEnd}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { _ = cs.Close() })
	return &client{h: h, cs: cs, ss: ss, pipe: clientEnd}
}

// An inline download holds its answer's bytes in the HTTP server's
// in-flight budget until its response has been written: while one holds
// the whole budget (its read held by the provider), another download is
// refused with rate_limited server_busy once the budget's wait passes,
// and once the first has answered, the budget is whole again.
func TestDownloadCountsInFlight(t *testing.T) {
	h := newHarness(t, nil)
	const budget = 64 << 10
	ts := serveHTTP(t, h, &HTTPOptions{MaxRequestBodyBytes: budget, MaxInFlightBytes: budget, InFlightWait: 50 * time.Millisecond})
	c := connectHTTP(t, h, ts.URL, httpClient(t, nil))
	id := c.ok("create_sandbox", nil)["sandbox_id"].(string)
	c.ok("write_file", map[string]any{"sandbox_id": id, "path": "/tmp/f", "content": "hello"})
	// The first download reserves room for its largest answer (the whole
	// budget), then its read is held.
	f := h.fp.InjectFault(fakeprovider.Fault{Op: sandbox.OpFilesDownload, SandboxID: id, Hang: true, Times: 1})
	first := make(chan map[string]any, 1)
	go func() { first <- c.ok("download_file", map[string]any{"sandbox_id": id, "path": "/tmp/f"}) }()
	waitFor(t, "the first download's read at the provider", func() bool { return f.InFlight() == 1 })
	te := c.fail("download_file", map[string]any{"sandbox_id": id, "path": "/tmp/f", "max_bytes": 10})
	if te.Category != sandbox.RateLimited || te.Code != codeServerBusy {
		t.Errorf("a download while the budget is full: %+v, want rate_limited %s", te, codeServerBusy)
	}
	f.Release()
	if out := <-first; out["size"] != 5.0 {
		t.Errorf("the first download: %v", out)
	}
	waitFor(t, "every response hold given back", func() bool {
		h.srv.holds.mu.Lock()
		defer h.srv.holds.mu.Unlock()
		return len(h.srv.holds.m) == 0
	})
	if out := c.ok("download_file", map[string]any{"sandbox_id": id, "path": "/tmp/f"}); out["size"] != 5.0 {
		t.Errorf("a download after the first answered: %v", out)
	}
}
