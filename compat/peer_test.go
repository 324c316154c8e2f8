package compat_test

// The TypeScript peer (peer/server.mjs) and the floor server, as processes the
// benchmarks in peer_bench_test.go drive side by side, and TestPeerAnswers,
// which checks that the peer gives the contract's shapes.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
)

// floorEnv makes the test binary serve the floor server on the address it
// holds instead of running tests (see TestMain).
const floorEnv = "SANDBOXKIT_PEER_FLOOR_ADDR"

// transferSize is the payload of the upload and download benchmarks.
const transferSize = 8 << 20

func TestMain(m *testing.M) {
	if addr := os.Getenv(floorEnv); addr != "" {
		if err := serveFloor(context.Background(), addr); err != nil {
			fmt.Fprintln(os.Stderr, "floor:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Outputs of the floor's tools: the shapes of the contract, as constants.
type (
	floorMeta struct {
		SandboxID  string  `json:"sandbox_id"`
		Template   string  `json:"template"`
		Status     string  `json:"status"`
		Region     *string `json:"region"`
		StartedAt  string  `json:"started_at"`
		EndAt      string  `json:"end_at"`
		CPUCount   int     `json:"cpu_count"`
		MemoryMB   int     `json:"memory_mb"`
		DiskSizeMB *int    `json:"disk_size_mb"`
	}
	floorExec struct {
		Stdout    string `json:"stdout"`
		Stderr    string `json:"stderr"`
		ExitCode  int    `json:"exit_code"`
		Truncated bool   `json:"truncated"`
	}
	floorUploadIn struct {
		Path       string `json:"path"`
		DataBase64 string `json:"data_base64"`
		SandboxID  string `json:"sandbox_id,omitempty"`
	}
	floorUpload struct {
		Path   string `json:"path"`
		Size   int    `json:"size"`
		SHA256 string `json:"sha256"`
	}
	floorDownload struct {
		Path       string `json:"path"`
		Size       int    `json:"size"`
		SHA256     string `json:"sha256"`
		DataBase64 string `json:"data_base64"`
		Truncated  bool   `json:"truncated"`
	}
)

// newFloor is a go-sdk server whose tools return constants: what the SDK
// and HTTP cost with no provider, no validation beyond the SDK's and no glue.
func newFloor() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "floor", Version: "0.0.0"}, nil)
	meta := floorMeta{SandboxID: "floor", Template: "base", Status: "running", StartedAt: "2026-01-01T00:00:00Z", EndAt: "2026-01-01T00:05:00Z", CPUCount: 2, MemoryMB: 512}
	payload := bytes.Repeat([]byte{0xa5}, transferSize)
	sum := sha256.Sum256(payload)
	down := floorDownload{Path: "/tmp/f", Size: transferSize, SHA256: hex.EncodeToString(sum[:]), DataBase64: base64.StdEncoding.EncodeToString(payload)}
	type anyIn = map[string]any
	for _, name := range []string{"create_sandbox", "get_sandbox"} {
		mcp.AddTool(s, &mcp.Tool{Name: name}, func(context.Context, *mcp.CallToolRequest, anyIn) (*mcp.CallToolResult, floorMeta, error) {
			return nil, meta, nil
		})
	}
	mcp.AddTool(s, &mcp.Tool{Name: "run_command"}, func(context.Context, *mcp.CallToolRequest, anyIn) (*mcp.CallToolResult, floorExec, error) {
		return nil, floorExec{Stdout: "hi\n"}, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "upload_file"}, func(_ context.Context, _ *mcp.CallToolRequest, in floorUploadIn) (*mcp.CallToolResult, floorUpload, error) {
		return nil, floorUpload{Path: in.Path, Size: transferSize, SHA256: down.SHA256}, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "download_file"}, func(context.Context, *mcp.CallToolRequest, anyIn) (*mcp.CallToolResult, floorDownload, error) {
		return nil, down, nil
	})
	return s
}

// serveFloor serves newFloor over Streamable HTTP on addr and logs its URL.
func serveFloor(ctx context.Context, addr string) error {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	s := newFloor()
	// The body cap of our server's 16 MiB-decoded uploads (base64 and framing).
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{MaxRequestBodyBytes: 24 << 20})
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	fmt.Fprintf(os.Stderr, "floor listening on http://%s/mcp\n", ln.Addr())
	return fmt.Errorf("serve: %w", (&http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}).Serve(ln))
}

// server is one MCP server process under test.
type server struct {
	name string
	url  string
	pid  int
}

// logTail keeps the last bytes a process wrote to stderr, for failure messages.
type logTail struct {
	mu  sync.Mutex
	buf []byte
}

func (l *logTail) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, line+"\n"...)
	if len(l.buf) > 8<<10 {
		l.buf = l.buf[len(l.buf)-8<<10:]
	}
}

func (l *logTail) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.buf)
}

// startServer runs cmd, waits for a stderr line matching ready (its first
// group is the MCP endpoint) and stops the process when tb ends.
func startServer(tb testing.TB, name string, cmd *exec.Cmd, ready *regexp.Regexp) *server {
	tb.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start %s: %v", name, err)
	}
	tail := &logTail{}
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			tail.add(sc.Text())
			if m := ready.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
		}
	}()
	tb.Cleanup(func() { stopProcess(cmd) })
	select {
	case u := <-urls:
		return &server{name: name, url: u, pid: cmd.Process.Pid}
	case <-time.After(hangGuard):
		tb.Fatalf("%s did not log its address within %v; stderr:\n%s", name, hangGuard, tail)
	}
	return nil
}

// hangGuard bounds the waits on peer processes. It only turns a hang into
// a failure: no test passes or fails on how long something took (CI
// machines have 2 cores and may be busy; a node server can start slowly).
const hangGuard = 2 * time.Minute

func stopProcess(cmd *exec.Cmd) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// startFake serves one fake provider on loopback and returns the E2B_*
// environment that points a server at it.
func startFake(tb testing.TB) (*fakeprovider.Provider, []string) {
	p := fakeprovider.New(&fakeprovider.Options{})
	tb.Cleanup(p.Close)
	srv, err := p.Listen("127.0.0.1:0")
	if err != nil {
		tb.Fatalf("fake provider: %v", err)
	}
	tb.Cleanup(func() { _ = srv.Close() })
	return p, []string{
		"E2B_API_URL=" + srv.URL(), "E2B_SANDBOX_URL=" + srv.URL(),
		"E2B_API_KEY=" + p.APIKey(), "E2B_DOMAIN=" + fakeprovider.DomainSuffix,
	}
}

var peerReady = regexp.MustCompile(`^peer listening on (http://\S+/mcp)$`)

// startPeer runs the TypeScript peer on loopback against the fake env.
func startPeer(tb testing.TB, node string, env []string) *server {
	cmd := exec.Command(node, "peer/server.mjs", "--http", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), env...)
	return startServer(tb, "peer", cmd, peerReady)
}

// needNode returns the Node binary that runs the peer, or skips (fails under
// SANDBOXKIT_COMPAT_REQUIRED) as TestOfficialClients does.
func needNode(tb testing.TB) string {
	node, why := findNode()
	if node == "" {
		if t, ok := tb.(*testing.T); ok {
			skipOrFail(t, why)
		}
		if os.Getenv(requireEnv) != "" {
			tb.Fatal(why)
		}
		tb.Skip(why + "; to run the peer benchmarks: `npm ci --prefix compat` (see compat/README.md)")
	}
	return node
}

// connect opens one MCP session over Streamable HTTP.
func connect(tb testing.TB, url string) *mcp.ClientSession {
	tb.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "peer-bench", Version: "0.0.0"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1, DisableStandaloneSSE: true, MaxEventSize: -1}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	cs, err := c.Connect(ctx, tr, nil)
	if err != nil {
		tb.Fatalf("connect %s: %v", url, err)
	}
	return cs
}

// call makes one tool call and fails on a protocol or tool error.
func call(ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any) (map[string]any, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if res.IsError {
		return nil, fmt.Errorf("%s: tool error %s", name, textOf(res))
	}
	out, ok := res.StructuredContent.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: structuredContent is %T, not an object", name, res.StructuredContent)
	}
	return out, nil
}

func textOf(res *mcp.CallToolResult) string {
	if len(res.Content) == 1 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			return tc.Text
		}
	}
	return fmt.Sprintf("(%d content blocks)", len(res.Content))
}

// TestPeerAnswers checks that the TypeScript peer gives the contract's
// shapes on the calls the benchmarks make, so that a figure compares like
// with like: TOOLS-3 (structuredContent and the same JSON as one text
// block), META-1 (exact metadata keys), EXEC-1, BIN-1, BIN-2 (bytes
// round-trip), SESSION-1 (the sandbox is destroyed when the session closes).
func TestPeerAnswers(t *testing.T) {
	node := needNode(t)
	fake, env := startFake(t)
	peer := startPeer(t, node, env)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	cs := connect(t, peer.url)

	created := mustCall(ctx, t, cs, "create_sandbox", map[string]any{})
	got := mustCall(ctx, t, cs, "get_sandbox", map[string]any{})
	wantKeys := []string{"cpu_count", "disk_size_mb", "end_at", "memory_mb", "region", "sandbox_id", "started_at", "status", "template"}
	if keys := sortedKeys(got); !slices.Equal(keys, wantKeys) {
		t.Errorf("get_sandbox keys = %v, want %v (META-1)", keys, wantKeys)
	}
	if got["sandbox_id"] != created["sandbox_id"] || got["status"] != "running" {
		t.Errorf("get_sandbox = %v, want the created sandbox %v, running", got, created["sandbox_id"])
	}
	if _, ok := fake.Sandbox(fmt.Sprint(created["sandbox_id"])); !ok {
		t.Errorf("the fake has no sandbox %v", created["sandbox_id"])
	}

	run := mustCall(ctx, t, cs, "run_command", map[string]any{"command": "echo out; echo err >&2; exit 3"})
	if run["stdout"] != "out\n" || run["stderr"] != "err\n" || run["exit_code"] != float64(3) || run["truncated"] != false {
		t.Errorf("run_command = %v, want stdout out, stderr err, exit_code 3 (EXEC-1)", run)
	}

	checkTransfer(ctx, t, cs)

	if err := cs.Close(); err != nil {
		t.Fatalf("close session: %v", err)
	}
	deadline := time.Now().Add(hangGuard)
	for fake.LiveCount() != 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := fake.LiveCount(); n != 0 {
		t.Errorf("%d sandboxes live %v after the session closed, want 0 (SESSION-1)", n, hangGuard)
	}
}

func checkTransfer(ctx context.Context, t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	payload := make([]byte, 300<<10)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	sum := sha256.Sum256(payload)
	wantSum := hex.EncodeToString(sum[:])
	up := mustCall(ctx, t, cs, "upload_file", map[string]any{"path": "/tmp/blob.bin", "data_base64": base64.StdEncoding.EncodeToString(payload)})
	if up["size"] != float64(len(payload)) || up["sha256"] != wantSum || up["path"] != "/tmp/blob.bin" {
		t.Errorf("upload_file = %v, want size %d sha256 %s (BIN-1)", up, len(payload), wantSum)
	}
	down := mustCall(ctx, t, cs, "download_file", map[string]any{"path": "/tmp/blob.bin"})
	data, err := base64.StdEncoding.DecodeString(fmt.Sprint(down["data_base64"]))
	if err != nil || !bytes.Equal(data, payload) || down["sha256"] != wantSum || down["truncated"] != false {
		t.Errorf("download_file: bytes round-trip %v (decode error %v), sha256 %v, truncated %v; want the uploaded bytes (BIN-2)",
			bytes.Equal(data, payload), err, down["sha256"], down["truncated"])
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "upload_file", Arguments: map[string]any{"path": "/tmp/x", "data_base64": "a"}})
	if err != nil || !res.IsError || res.StructuredContent != nil {
		t.Errorf("upload_file with bad base64: err %v, result %+v; want a tool error without structuredContent (BIN-1, ERR-2)", err, res)
	}
}

// mustCall calls a tool and checks TOOLS-3: the text block holds the same
// JSON as structuredContent.
func mustCall(ctx context.Context, t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) map[string]any {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		t.Fatalf("%s: tool error %s", name, textOf(res))
	}
	var fromText any
	if err := json.Unmarshal([]byte(textOf(res)), &fromText); err != nil {
		t.Fatalf("%s: the text block is not JSON: %v", name, err)
	}
	structured, _ := json.Marshal(res.StructuredContent)
	var fromStructured any
	_ = json.Unmarshal(structured, &fromStructured)
	if !jsonEqual(fromText, fromStructured) {
		t.Errorf("%s: text block and structuredContent differ (TOOLS-3)", name)
	}
	out, ok := fromStructured.(map[string]any)
	if !ok {
		t.Fatalf("%s: structuredContent is not an object", name)
	}
	return out
}

func jsonEqual(a, b any) bool {
	x, errA := json.Marshal(a)
	y, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(x, y)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// procCPU is the user plus system CPU time the process has used
// (/proc/<pid>/stat fields 14 and 15, in USER_HZ = 100 ticks a second).
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("read stat: %w", err)
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("malformed /proc stat")
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, errors.New("short /proc stat")
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("parse stat: %w", err)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}

// procMem returns a /proc/<pid>/status figure in bytes (VmRSS, VmHWM).
func procMem(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("read status: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse %s: %w", field, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("no %s in /proc status", field)
}

// resetPeakRSS makes VmHWM start again from the current RSS (Linux >= 4.0).
func resetPeakRSS(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}
