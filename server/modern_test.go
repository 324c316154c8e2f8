package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/internal/syncbuf"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// connectModern opens a 2026-07-28 client on one in-memory connection, as
// a stdio process serves it: one SDK session for every request.
func (h *harness) connectModern() *client {
	h.t.Helper()
	ctx := context.Background()
	serverEnd, clientEnd := net.Pipe()
	ss, err := h.srv.mcp.Connect(ctx, &mcp.IOTransport{Reader: serverEnd, Writer: serverEnd}, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil)
	cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: clientEnd, Writer: clientEnd}, &mcp.ClientSessionOptions{ProtocolVersion: ModernProtocolVersion})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { _ = cs.Close() })
	return &client{h: h, cs: cs, ss: ss, pipe: clientEnd}
}

// connectModernHTTP opens a 2026-07-28 client over Streamable HTTP.
func connectModernHTTP(t *testing.T, h *harness, url string, hc *http.Client) *client {
	t.Helper()
	cl := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil)
	cs, err := cl.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url + MCPPath, HTTPClient: hc, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: ModernProtocolVersion})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return &client{h: h, cs: cs}
}

// MODERN-1: no default, whatever earlier requests on the same connection did,
// and nothing is created implicitly.
func TestModernNoDefault(t *testing.T) {
	h := newHarness(t, nil)
	c := h.connectModern()
	created := c.ok("create_sandbox", nil)
	for _, tool := range []struct {
		name string
		args map[string]any
	}{
		{"run_command", map[string]any{"command": "true"}},
		{"write_file", map[string]any{"path": "/tmp/a", "content": "x"}},
		{"start_background_command", map[string]any{"command": "true"}},
		{"get_sandbox", nil},
		{"set_sandbox_timeout", map[string]any{"timeout": 60}},
		{"kill_sandbox", nil},
	} {
		te := c.fail(tool.name, tool.args)
		if te.Category != sandbox.InvalidArgument || te.Code != codeNoDefault || !strings.Contains(te.Recovery, "create_sandbox") {
			t.Errorf("%s without sandbox_id: %+v, want no_default_sandbox naming create_sandbox", tool.name, te)
		}
	}
	if n := h.fp.LiveCount(); n != 1 {
		t.Errorf("%d sandboxes live, want only the one created", n)
	}
	c.ok("run_command", map[string]any{"command": "true", "sandbox_id": created["sandbox_id"]})
}

// MODERN-1: a legacy session's default is never a modern request's.
func TestModernIgnoresLegacyDefault(t *testing.T) {
	h := newHarness(t, nil)
	legacy := h.connect()
	legacy.ok("create_sandbox", nil)
	te := h.connectModern().fail("run_command", map[string]any{"command": "true"})
	if te.Code != codeNoDefault {
		t.Errorf("modern call used the legacy default: %+v", te)
	}
}

// LEASE-1, LEASE-4: the policy and principal travel in platform metadata,
// and the sandbox carries no instance tag that a sweep would act on.
func TestModernLeaseMetadata(t *testing.T) {
	h := newHarness(t, nil)
	c := h.connectModern()
	id := c.ok("create_sandbox", map[string]any{"timeout": 120})["sandbox_id"].(string)
	rec, ok := h.fp.Sandbox(id)
	if !ok {
		t.Fatal("created sandbox not live")
	}
	if rec.Metadata[LeaseTagKey] != "120" || rec.Metadata[PrincipalTagKey] != LocalPrincipal {
		t.Errorf("metadata %v: want lease 120 and principal %q", rec.Metadata, LocalPrincipal)
	}
	if _, tagged := rec.Metadata[InstanceTagKey]; tagged {
		t.Errorf("a leased sandbox carries %s: a sweep would destroy it", InstanceTagKey)
	}
	if d := rec.EndAt.Sub(rec.StartedAt); d > 120*time.Second {
		t.Errorf("end at create is %v after start, want at most the policy", d)
	}
	def := c.ok("create_sandbox", nil)["sandbox_id"].(string)
	if rec, _ := h.fp.Sandbox(def); rec.Metadata[LeaseTagKey] != "300" {
		t.Errorf("default lease %q, want 300 (LEASE-1)", rec.Metadata[LeaseTagKey])
	}
}

// LEASE-2: a data-plane call renews by the policy read from metadata, on a
// server that never saw the create (another replica).
func TestModernRenewsByPolicyOnAnyReplica(t *testing.T) {
	h := newHarness(t, nil)
	id := h.connectModern().ok("create_sandbox", map[string]any{"timeout": 90})["sandbox_id"].(string)
	other := h.replica()
	h.fp.Journal().Reset()
	other.connectModern().ok("run_command", map[string]any{"command": "true", "sandbox_id": id})
	calls := h.fp.Journal().Calls(sandbox.OpSetTimeout)
	if len(calls) != 1 {
		t.Fatalf("%d timeout calls, want 1 renewal", len(calls))
	}
	var body struct{ Timeout int64 }
	if err := json.Unmarshal(calls[0].Body, &body); err != nil || body.Timeout != 90 {
		t.Errorf("renewal body %s: want timeout 90 (the policy)", calls[0].Body)
	}
}

// replica is a second server on the same fake provider, as another replica
// of one deployment.
func (h *harness) replica() *harness {
	h.t.Helper()
	p, err := h.fp.Platform()
	if err != nil {
		h.t.Fatal(err)
	}
	srv, err := New(&Deps{Platform: p}, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return &harness{t: h.t, fp: h.fp, srv: srv, logs: &syncbuf.Buffer{}}
}

// LEASE-3: neither the end of the request or connection, nor a legacy
// session's close, nor shutdown ends a leased sandbox.
func TestModernLeaseSurvivesCloseAndShutdown(t *testing.T) {
	h := newHarness(t, nil)
	ts := serveHTTP(t, h, nil)
	hc := httpClient(t, nil)
	legacy := connectHTTP(t, h, ts.URL, hc)
	c := connectModernHTTP(t, h, ts.URL, hc)
	id := c.ok("create_sandbox", nil)["sandbox_id"].(string)
	// The legacy session uses it too, then closes.
	legacy.ok("run_command", map[string]any{"command": "true", "sandbox_id": id})
	_ = legacy.cs.Close()
	_ = c.cs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.fp.Sandbox(id); !ok {
		t.Error("a leased sandbox was destroyed by a close or shutdown")
	}
}

// HANDLE-1: another principal's sandbox and command_id are not_found, as
// unknown ones are; HANDLE-2: the command_id has 128 random bits and works
// on another connection of the same principal.
func TestModernPrincipals(t *testing.T) {
	h := newHarness(t, nil)
	ts := serveTwoPrincipals(t, h)
	as := func(tok string) *client { return connectModernHTTP(t, h, ts.URL, bearer(t, tok)) }
	alice, bob := as("token-of-alice-123"), as("token-of-bob-4567")
	id := alice.ok("create_sandbox", nil)["sandbox_id"].(string)
	if rec, _ := h.fp.Sandbox(id); rec.Metadata[PrincipalTagKey] != "alice" {
		t.Errorf("principal in metadata %q, want alice", rec.Metadata[PrincipalTagKey])
	}
	cmd := alice.ok("start_background_command", map[string]any{"command": "echo hi", "sandbox_id": id})["command_id"].(string)
	if key, _, _ := strings.Cut(strings.TrimPrefix(cmd, "bg-"), "."); len(key) != 32 {
		t.Errorf("command_id %q: want 128 random bits", cmd)
	}
	unknown := bob.fail("get_sandbox", map[string]any{"sandbox_id": "nosuchsandbox000000000"})
	for name, args := range map[string]map[string]any{
		"get_sandbox":         {"sandbox_id": id},
		"run_command":         {"command": "true", "sandbox_id": id},
		"set_sandbox_timeout": {"sandbox_id": id, "timeout": 10},
		"kill_sandbox":        {"sandbox_id": id},
	} {
		te := bob.fail(name, args)
		if te.Category != sandbox.NotFound || te.Recovery != unknown.Recovery || te.HTTPStatus != unknown.HTTPStatus {
			t.Errorf("bob %s on alice's sandbox: %+v, want what an unknown one gets (%+v)", name, te, unknown)
		}
	}
	for _, name := range []string{"get_background_command", "kill_background_command"} {
		if te := bob.fail(name, map[string]any{"command_id": cmd}); te.Category != sandbox.NotFound {
			t.Errorf("bob %s on alice's command: %+v", name, te)
		}
	}
	again := as("token-of-alice-123")
	waitFor(t, "command output on another connection", func() bool {
		out := again.ok("get_background_command", map[string]any{"command_id": cmd})
		return out["stdout"] == "hi\n" && out["running"] == false
	})
	if _, ok := h.fp.Sandbox(id); !ok {
		t.Error("bob's kill reached alice's sandbox")
	}
}

// HANDLE-1: a modern list_sandboxes of an authenticated principal shows
// only what that principal's modern requests created, filtered by the
// platform (the metadata query of GET /v2/sandboxes), never another
// principal's sandboxes nor ones the server cannot attribute.
func TestModernListOnlyOwnPrincipal(t *testing.T) {
	h := newHarness(t, nil)
	ts := serveTwoPrincipals(t, h)
	as := func(tok string) *client { return connectModernHTTP(t, h, ts.URL, bearer(t, tok)) }
	alice, bob := as("token-of-alice-123"), as("token-of-bob-4567")
	created := map[string][]string{}
	for who, c := range map[string]*client{"alice": alice, "bob": bob} {
		for range 2 {
			created[who] = append(created[who], c.ok("create_sandbox", nil)["sandbox_id"].(string))
		}
	}
	h.fp.AddSandbox(fakeprovider.SandboxSeed{}) // not created by this server: nobody's to list
	for who, c := range map[string]*client{"alice": alice, "bob": bob} {
		h.fp.Journal().Reset()
		var got []string
		for _, it := range c.ok("list_sandboxes", nil)["sandboxes"].([]any) {
			got = append(got, it.(map[string]any)["sandbox_id"].(string))
		}
		slices.Sort(got)
		want := slices.Sorted(slices.Values(created[who]))
		if !slices.Equal(got, want) {
			t.Errorf("%s lists %v, want exactly %v", who, got, want)
		}
		for _, e := range h.fp.Journal().Calls(sandbox.OpListSandboxes) {
			if q := e.Query.Get("metadata"); q != PrincipalTagKey+"="+who {
				t.Errorf("%s's list asked the platform with metadata %q, want the principal filter", who, q)
			}
		}
	}
}

// HANDLE-3: a killed sandbox and its command_id are not_found, saying so.
func TestModernKilledHandles(t *testing.T) {
	h := newHarness(t, nil)
	c := h.connectModern()
	id := c.ok("create_sandbox", nil)["sandbox_id"].(string)
	cmd := c.ok("start_background_command", map[string]any{"command": "sleep 100", "sandbox_id": id})["command_id"].(string)
	c.ok("kill_sandbox", map[string]any{"sandbox_id": id})
	for name, args := range map[string]map[string]any{
		"run_command":            {"command": "true", "sandbox_id": id},
		"get_sandbox":            {"sandbox_id": id},
		"get_background_command": {"command_id": cmd},
		"kill_sandbox":           {"sandbox_id": id},
	} {
		te := c.fail(name, args)
		if te.Category != sandbox.NotFound || !strings.Contains(te.Recovery, "killed") {
			t.Errorf("%s after kill: %+v, want not_found saying it was killed", name, te)
		}
	}
	// The server keeps nothing of a killed sandbox.
	if records := h.srv.deps.leases.size(); records != 0 {
		t.Errorf("after kill the server keeps %d lease records, want none", records)
	}
}

// A sandbox killed behind the server's back (another replica) is not_found
// on the next call even though its record was cached (HANDLE-3).
func TestModernKilledElsewhere(t *testing.T) {
	h := newHarness(t, nil)
	c := h.connectModern()
	id := c.ok("create_sandbox", nil)["sandbox_id"].(string)
	c.ok("run_command", map[string]any{"command": "true", "sandbox_id": id})
	h.replica().connectModern().ok("kill_sandbox", map[string]any{"sandbox_id": id})
	if te := c.fail("run_command", map[string]any{"command": "true", "sandbox_id": id}); te.Category != sandbox.NotFound {
		t.Errorf("run_command on a sandbox killed elsewhere: %+v, want not_found", te)
	}
}

// RENEW-2 holds for modern requests: an external sandbox is reached
// without a lifetime and never renewed.
func TestModernExternalNotRenewed(t *testing.T) {
	h := newHarness(t, nil)
	ext := h.fp.AddSandbox(fakeprovider.SandboxSeed{})
	c := h.connectModern()
	h.fp.Journal().Reset()
	c.ok("run_command", map[string]any{"command": "true", "sandbox_id": ext})
	if n := h.fp.Journal().Count(sandbox.OpSetTimeout); n != 0 {
		t.Errorf("%d timeout calls on an external sandbox, want none", n)
	}
}

// postModern sends one raw modern JSON-RPC request.
func postModern(t *testing.T, url, version string, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+MCPPath, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", version)
	var probe struct{ Method string }
	_ = json.Unmarshal([]byte(body), &probe)
	req.Header.Set("Mcp-Method", probe.Method)
	resp, err := httpClient(t, nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, data
}

func modernBody(method, version string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"` + version +
		`","io.modelcontextprotocol/clientCapabilities":{}}}}`
}

// TOOLS-4: discover lists every version; an unknown one gets -32022 with
// the supported list; no session ID is minted; GET and DELETE get 405.
func TestModernHTTPProtocol(t *testing.T) {
	h := newHarness(t, nil)
	ts := serveHTTP(t, h, nil)
	resp, data := postModern(t, ts.URL, ModernProtocolVersion, modernBody("server/discover", ModernProtocolVersion))
	if resp.Header.Get("Mcp-Session-Id") != "" {
		t.Error("a modern request got an Mcp-Session-Id")
	}
	for _, v := range SupportedProtocolVersions() {
		if !bytes.Contains(data, []byte(`"`+v+`"`)) {
			t.Errorf("server/discover does not list %s: %s", v, data)
		}
	}
	if !bytes.Contains(data, []byte(`"ttlMs"`)) {
		t.Errorf("server/discover has no ttlMs: %s", data)
	}
	_, data = postModern(t, ts.URL, "2099-01-01", modernBody("tools/list", "2099-01-01"))
	if !bytes.Contains(data, []byte("-32022")) || !bytes.Contains(data, []byte(`"supported"`)) {
		t.Errorf("unknown version: %s, want -32022 with supported", data)
	}
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		req, _ := http.NewRequest(method, ts.URL+MCPPath, nil)
		req.Header.Set("MCP-Protocol-Version", ModernProtocolVersion)
		req.Header.Set("Accept", "text/event-stream")
		resp, err := httpClient(t, nil).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("modern %s: %d, want 405", method, resp.StatusCode)
		}
	}
	if n := h.srv.reg.liveSessions(); n != 0 {
		t.Errorf("%d session records after modern requests, want 0", n)
	}
}

// TOOLS-6: tools/list is byte-identical across eras and transports; the
// modern list result carries caching hints.
func TestToolsListAcrossEras(t *testing.T) {
	h := newHarness(t, nil)
	ts := serveHTTP(t, h, nil)
	hc := httpClient(t, nil)
	want := toolsJSON(t, h.connect().cs)
	for name, cs := range map[string]*mcp.ClientSession{
		"modern stdio": h.connectModern().cs,
		"modern HTTP":  connectModernHTTP(t, h, ts.URL, hc).cs,
		"legacy HTTP":  connectHTTP(t, h, ts.URL, hc).cs,
	} {
		if got := toolsJSON(t, cs); !bytes.Equal(got, want) {
			t.Errorf("%s: tools/list differs from the legacy stdio one", name)
		}
	}
	_, data := postModern(t, ts.URL, ModernProtocolVersion, modernBody("tools/list", ModernProtocolVersion))
	if !bytes.Contains(data, []byte(`"ttlMs":3600000`)) || !bytes.Contains(data, []byte(`"cacheScope":"public"`)) {
		t.Errorf("modern tools/list without caching hints: %.300s", data)
	}
}

// LEASE-3 on stdio: the end of input ends the process's session, and a
// sandbox a modern request created there outlives it.
func TestModernLeaseSurvivesStdioEOF(t *testing.T) {
	h := newHarness(t, nil)
	serverEnd, clientEnd := net.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- h.srv.Run(context.Background(), &mcp.IOTransport{Reader: serverEnd, Writer: serverEnd})
	}()
	cl := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil)
	cs, err := cl.Connect(context.Background(), &mcp.IOTransport{Reader: clientEnd, Writer: clientEnd}, &mcp.ClientSessionOptions{ProtocolVersion: ModernProtocolVersion})
	if err != nil {
		t.Fatal(err)
	}
	c := &client{h: h, cs: cs}
	id := c.ok("create_sandbox", nil)["sandbox_id"].(string)
	_ = cs.Close() // end of input
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, ok := h.fp.Sandbox(id); !ok {
		t.Error("end of input destroyed a leased sandbox")
	}
}

// BG-2 for a modern command: read in small pieces from the cursor, no byte
// is lost or repeated, and the exit code comes once the command ends;
// kill_background_command ends a running one.
func TestModernBackgroundCommand(t *testing.T) {
	h := newHarness(t, nil)
	c := h.connectModern()
	id := c.ok("create_sandbox", nil)["sandbox_id"].(string)
	cmd := c.ok("start_background_command", map[string]any{"sandbox_id": id, "command": "echo abc; echo de >&2; exit 3"})["command_id"].(string)
	var stdout, stderr string
	cursor := "0.0"
	waitFor(t, "the command's end and all its output", func() bool {
		out := c.ok("get_background_command", map[string]any{"command_id": cmd, "cursor": cursor, "max_bytes": 2})
		stdout += out["stdout"].(string)
		stderr += out["stderr"].(string)
		cursor = out["next_cursor"].(string)
		return out["running"] == false && out["truncated"] == false
	})
	if stdout != "abc\n" || stderr != "de\n" {
		t.Errorf("read %q / %q, want \"abc\\n\" / \"de\\n\"", stdout, stderr)
	}
	if got := c.ok("get_background_command", map[string]any{"command_id": cmd}); got["exit_code"] != 3.0 {
		t.Errorf("exit_code %v, want 3", got["exit_code"])
	}
	long := c.ok("start_background_command", map[string]any{"sandbox_id": id, "command": "sleep 600"})["command_id"].(string)
	if got := c.ok("get_background_command", map[string]any{"command_id": long}); got["running"] != true || got["exit_code"] != nil {
		t.Errorf("a sleeping command: %v, want running with no exit code", got)
	}
	c.ok("kill_background_command", map[string]any{"command_id": long, "signal": "SIGKILL"})
	waitFor(t, "the killed command's end", func() bool {
		return c.ok("get_background_command", map[string]any{"command_id": long})["running"] == false
	})
	if te := c.fail("get_background_command", map[string]any{"command_id": "bg-0123456789abcdef0123456789abcdef." + "bm9zdWNo"}); te.Category != sandbox.NotFound {
		t.Errorf("a made-up command_id: %+v, want not_found", te)
	}
}

// A modern upload large enough to go through the HTTP front end's argument
// stash reaches its handler (the stash is keyed without a session).
func TestModernHTTPLargeUpload(t *testing.T) {
	h := newHarness(t, nil)
	ts := serveHTTP(t, h, nil)
	c := connectModernHTTP(t, h, ts.URL, httpClient(t, nil))
	id := c.ok("create_sandbox", nil)["sandbox_id"].(string)
	data := bytes.Repeat([]byte("0123456789abcdef"), 1024) // 16 KiB, beyond stashMinBytes
	got := c.ok("upload_file", map[string]any{"sandbox_id": id, "path": "/tmp/big", "data_base64": base64.StdEncoding.EncodeToString(data)})
	if got["size"] != float64(len(data)) {
		t.Errorf("uploaded %v bytes, want %d", got["size"], len(data))
	}
}

// Modern requests pass the same front door as legacy ones: bearer token,
// DNS-rebinding (Host) and cross-origin checks.
func TestModernHTTPGuards(t *testing.T) {
	h := newHarness(t, nil)
	ts := serveHTTP(t, h, &HTTPOptions{Token: "the-only-token-12345"})
	body := modernBody("tools/list", ModernProtocolVersion)
	for name, tc := range map[string]struct {
		header http.Header
		host   string
		want   int
	}{
		"no token":       {http.Header{}, "", http.StatusUnauthorized},
		"wrong token":    {http.Header{"Authorization": {"Bearer nope-nope-nope-nope"}}, "", http.StatusUnauthorized},
		"foreign Host":   {http.Header{"Authorization": {"Bearer the-only-token-12345"}}, "evil.example", http.StatusForbidden},
		"foreign Origin": {http.Header{"Authorization": {"Bearer the-only-token-12345"}, "Origin": {"https://evil.example"}, "Sec-Fetch-Site": {"cross-site"}}, "", http.StatusForbidden},
		"good":           {http.Header{"Authorization": {"Bearer the-only-token-12345"}}, "", http.StatusOK},
	} {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+MCPPath, strings.NewReader(body))
		for k, v := range tc.header {
			req.Header[k] = v
		}
		if tc.host != "" {
			req.Host = tc.host
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", ModernProtocolVersion)
		req.Header.Set("Mcp-Method", "tools/list")
		resp, err := httpClient(t, nil).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s: status %d, want %d", name, resp.StatusCode, tc.want)
		}
	}
}

// Concurrent modern calls on one sandbox, through two servers sharing the
// provider, each starting with an empty lease cache: every call succeeds
// and every renewal uses the policy (run with -race).
func TestModernConcurrentCalls(t *testing.T) {
	h := newHarness(t, nil)
	id := h.connectModern().ok("create_sandbox", map[string]any{"timeout": 77})["sandbox_id"].(string)
	servers := []*harness{h, h.replica()}
	h.fp.Journal().Reset()
	var wg sync.WaitGroup
	for i := range 16 {
		c := servers[i%2].connectModern()
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_command", Arguments: map[string]any{"command": "true", "sandbox_id": id}})
			if err != nil || res.IsError {
				t.Errorf("run_command: %v %v", err, res)
			}
		}()
	}
	wg.Wait()
	for _, e := range h.fp.Journal().Calls(sandbox.OpSetTimeout) {
		if !bytes.Contains(e.Body, []byte(`"timeout":77`)) {
			t.Errorf("renewal %s, want the policy 77", e.Body)
		}
	}
	if n := h.fp.Journal().Count(sandbox.OpSetTimeout); n != 16 {
		t.Errorf("%d renewals for 16 calls", n)
	}
}

// A legacy session belongs to the principal that opened it: another
// principal's request or DELETE with its Mcp-Session-Id is refused and ends
// nothing.
func TestLegacySessionBoundToPrincipal(t *testing.T) {
	h := newHarness(t, nil)
	ts := serveTwoPrincipals(t, h)
	alice := connectHTTP(t, h, ts.URL, bearer(t, "token-of-alice-123"))
	alice.ok("create_sandbox", nil)
	sid := alice.cs.ID()
	bob := http.Header{"Authorization": {"Bearer token-of-bob-4567"}}
	hc := httpClient(t, nil)
	resp, _ := rawPost(t, hc, ts.URL, sid, strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_sandbox","arguments":{}}}`), bob)
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("bob's call in alice's session: %d, want 403", resp.StatusCode)
	}
	req, _ := http.NewRequest(http.MethodDelete, ts.URL+MCPPath, nil)
	req.Header = bob.Clone()
	req.Header.Set("Mcp-Session-Id", sid)
	if resp, err := hc.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("bob's DELETE of alice's session: %v %v, want 403", resp, err)
	} else {
		_ = resp.Body.Close()
	}
	alice.ok("get_sandbox", nil) // still alice's, with its default

	// HANDLE-1 holds in bob's own 2025 session too: alice's leased sandbox
	// is not_found there, as an unknown one is.
	leased := connectModernHTTP(t, h, ts.URL, bearer(t, "token-of-alice-123")).ok("create_sandbox", nil)["sandbox_id"]
	bobs := connectHTTP(t, h, ts.URL, httpClient(t, bob))
	for name, args := range map[string]map[string]any{
		"get_sandbox":         {"sandbox_id": leased},
		"run_command":         {"command": "true", "sandbox_id": leased},
		"set_sandbox_timeout": {"sandbox_id": leased, "timeout": 10},
		"kill_sandbox":        {"sandbox_id": leased},
	} {
		if te := bobs.fail(name, args); te.Category != sandbox.NotFound {
			t.Errorf("bob's 2025 session, %s on alice's leased sandbox: %+v, want not_found", name, te)
		}
	}
	if _, ok := h.fp.Sandbox(leased.(string)); !ok {
		t.Error("bob's 2025 session killed alice's leased sandbox")
	}
	aliceLegacy := connectHTTP(t, h, ts.URL, bearer(t, "token-of-alice-123"))
	aliceLegacy.ok("run_command", map[string]any{"command": "true", "sandbox_id": leased})
}
