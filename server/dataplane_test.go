package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// renewals returns the bodies of the set-timeout requests for id after n.
func renewals(fp *fakeprovider.Provider, n int, id string) []string {
	var out []string
	for _, e := range journalFrom(fp, n) {
		if e.Op == sandbox.OpSetTimeout && e.SandboxID == id {
			out = append(out, string(e.Body))
		}
	}
	return out
}

func TestImplicitCreate(t *testing.T) {
	h := newHarness(t, nil)
	c := h.connect()
	t.Run("SESSION-2 lifecycle tools never create", func(t *testing.T) {
		for _, tool := range []string{"get_sandbox", "set_sandbox_timeout", "kill_sandbox", "list_sandboxes"} {
			args := map[string]any{}
			if tool == "set_sandbox_timeout" {
				args["timeout"] = 60
			}
			c.call(tool, args)
		}
		if n := h.fp.Journal().Count(sandbox.OpCreateSandbox); n != 0 {
			t.Errorf("%d creates", n)
		}
	})
	t.Run("SESSION-2 concurrent calls create one default", func(t *testing.T) {
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				res, err := c.callErr("run_command", map[string]any{"command": "echo hi"})
				if err != nil || res.IsError {
					t.Errorf("run_command: %v %v", err, res)
				}
			})
		}
		wg.Wait()
		if n := h.fp.Journal().Count(sandbox.OpCreateSandbox); n != 1 {
			t.Errorf("%d creates, want 1", n)
		}
		id, ok := c.session().defaultSandbox()
		if !ok {
			t.Fatal("no default after implicit create")
		}
		if got := snapshotSession(c.session()); got != `default="`+id+`" owned=[`+id+`=5m0s] commands=0 closed=false` {
			t.Errorf("session %s", got)
		}
		body := h.fp.Journal().Calls(sandbox.OpCreateSandbox)[0].Body
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		if m["templateID"] != sandbox.DefaultTemplate {
			t.Errorf("implicit create template %v", m["templateID"])
		}
	})
	t.Run("SESSION-1 close destroys the implicit sandbox", func(t *testing.T) {
		c.close()
		if h.fp.LiveCount() != 0 {
			t.Errorf("%d live", h.fp.LiveCount())
		}
	})
}

func TestRenewal(t *testing.T) {
	h := newHarness(t, nil)
	ext := h.fp.AddSandbox(fakeprovider.SandboxSeed{})
	c := h.connect()
	own := c.ok("create_sandbox", map[string]any{"timeout": 600})["sandbox_id"].(string)

	every := []struct {
		tool string
		args map[string]any
	}{
		{"run_command", map[string]any{"command": "true"}},
		{"run_code", map[string]any{"code": "true", "language": "bash"}},
		{"write_file", map[string]any{"path": "/tmp/r.txt", "content": "r"}},
		{"read_file", map[string]any{"path": "/tmp/r.txt"}},
		{"list_files", map[string]any{"path": "/tmp"}},
		{"upload_file", map[string]any{"path": "/tmp/r.bin", "data_base64": "AAE="}},
		{"download_file", map[string]any{"path": "/tmp/r.bin"}},
		{"start_background_command", map[string]any{"command": "true"}},
	}
	check := func(t *testing.T, policy int) {
		t.Helper()
		for _, call := range every {
			n := h.fp.Journal().Len()
			c.ok(call.tool, call.args)
			got := renewals(h.fp, n, own)
			if want := []string{fmt.Sprintf(`{"timeout":%d}`, policy)}; !slices.Equal(got, want) {
				t.Errorf("RENEW-1 %s: renewals %v, want %v", call.tool, got, want)
			}
			if e := journalFrom(h.fp, n); e[len(e)-1].Op != sandbox.OpSetTimeout {
				t.Errorf("RENEW-1 %s: renewal is not the last request: %v", call.tool, ops(e))
			}
		}
	}
	t.Run("RENEW-1 initial policy is the create timeout", func(t *testing.T) { check(t, 600) })
	t.Run("TIMEOUT-3 success sets the policy", func(t *testing.T) {
		c.ok("set_sandbox_timeout", map[string]any{"timeout": 900})
		check(t, 900)
	})
	t.Run("TIMEOUT-4 failure keeps the policy", func(t *testing.T) {
		f := h.fp.InjectFault(fakeprovider.Fault{Op: sandbox.OpSetTimeout, Status: 503, Times: 1})
		c.fail("set_sandbox_timeout", map[string]any{"timeout": 30})
		f.Clear()
		check(t, 900)
	})
	t.Run("background reads renew too", func(t *testing.T) {
		id := c.ok("start_background_command", map[string]any{"command": "echo x"})["command_id"]
		n := h.fp.Journal().Len()
		c.ok("get_background_command", map[string]any{"command_id": id})
		if got := renewals(h.fp, n, own); len(got) != 1 {
			t.Errorf("renewals %v", got)
		}
	})
	t.Run("RENEW-2 external: connect, never renew, own or destroy", func(t *testing.T) {
		n := h.fp.Journal().Len()
		out := c.ok("run_command", map[string]any{"command": "echo ext", "sandbox_id": ext})
		if out["stdout"] != "ext\n" {
			t.Errorf("stdout %q", out["stdout"])
		}
		got := journalFrom(h.fp, n)
		if got[0].Op != sandbox.OpConnectSandbox || got[0].SandboxID != ext {
			t.Errorf("first request %s", got[0].Op)
		}
		if r := renewals(h.fp, n, ext); len(r) != 0 {
			t.Errorf("external renewed: %v", r)
		}
		if _, owned := c.session().ownedByID(ext); owned {
			t.Error("external taken over")
		}
		if d, _ := c.session().defaultSandbox(); d != own {
			t.Errorf("default changed to %s", d)
		}
		c.close()
		if _, ok := h.fp.Sandbox(ext); !ok {
			t.Error("external destroyed at close")
		}
		if _, ok := h.fp.Sandbox(own); ok {
			t.Error("owned survived close")
		}
	})
}

func TestRunCommand(t *testing.T) {
	h := newHarness(t, &harnessOptions{limits: Limits{OutputBytes: 200}})
	c := h.connect()
	t.Run("EXEC-1 non-zero exit is a result", func(t *testing.T) {
		out := c.ok("run_command", map[string]any{"command": "echo out; echo err >&2; exit 3"})
		if out["stdout"] != "out\n" || out["stderr"] != "err\n" || out["exit_code"] != float64(3) || out["truncated"] != false {
			t.Errorf("result %v", out)
		}
	})
	t.Run("EXEC-1 cwd and envs", func(t *testing.T) {
		c.ok("run_command", map[string]any{"command": "mkdir -p /tmp/wd"})
		out := c.ok("run_command", map[string]any{"command": "pwd; echo $GREETING", "cwd": "/tmp/wd", "envs": map[string]any{"GREETING": "hi"}})
		if out["stdout"] != "/tmp/wd\nhi\n" {
			t.Errorf("stdout %q", out["stdout"])
		}
	})
	t.Run("EXEC-3 head and tail kept", func(t *testing.T) {
		out := c.ok("run_command", map[string]any{"command": "seq 1 1000; seq 1 500 >&2"})
		stdout, stderr := out["stdout"].(string), out["stderr"].(string)
		if out["truncated"] != true || len(stdout) > 200 || len(stderr) > 200 {
			t.Errorf("truncated %v, lengths %d %d", out["truncated"], len(stdout), len(stderr))
		}
		if !strings.HasPrefix(stdout, "1\n2\n3\n") || !strings.HasSuffix(stdout, "999\n1000\n") || !strings.Contains(stdout, "bytes truncated") {
			t.Errorf("stdout %q", stdout)
		}
		if !strings.HasSuffix(stderr, "500\n") {
			t.Errorf("stderr %q", stderr)
		}
	})
	t.Run("EXEC-1 timeout kills and is a timeout error", func(t *testing.T) {
		// The sleep outlasts go test's own timeout: only the kill ends it.
		te := c.fail("run_command", map[string]any{"command": "sleep 3600", "timeout": 1})
		if te.Category != sandbox.Timeout || te.Code != codeCommandTimeout {
			t.Errorf("error %+v", te)
		}
	})
	t.Run("EXEC-2 run_code", func(t *testing.T) {
		out := c.ok("run_code", map[string]any{"code": "echo code; exit 4", "language": "bash"})
		if out["stdout"] != "code\n" || out["exit_code"] != float64(4) {
			t.Errorf("result %v", out)
		}
		// The temporary file is removed.
		out = c.ok("run_command", map[string]any{"command": "ls /tmp | grep -c sandboxkit-code || true"})
		if out["stdout"] != "0\n" {
			t.Errorf("leftover code files: %q", out["stdout"])
		}
		// The fake's python3 (fakecodeinterp, in-process) runs the default language.
		out = c.ok("run_code", map[string]any{"code": "print(1)"})
		if out["exit_code"] != float64(0) || out["stdout"] != "1\n" {
			t.Errorf("run_code python: %v", out)
		}
	})
}

func TestFiles(t *testing.T) {
	h := newHarness(t, &harnessOptions{limits: Limits{ReadFileBytes: 1000}})
	c := h.connect()
	t.Run("FILE-1 FILE-2 round trip with parents", func(t *testing.T) {
		text := "héllo\nwörld ✓\n"
		out := c.ok("write_file", map[string]any{"path": "/tmp/deep/er/f.txt", "content": text})
		if out["path"] != "/tmp/deep/er/f.txt" || out["bytes_written"] != float64(len(text)) {
			t.Errorf("write %v", out)
		}
		out = c.ok("read_file", map[string]any{"path": "/tmp/deep/er/f.txt"})
		if out["content"] != text || out["path"] != "/tmp/deep/er/f.txt" {
			t.Errorf("read %v", out)
		}
	})
	t.Run("FILE-2 binary and large files point to download_file", func(t *testing.T) {
		c.ok("upload_file", map[string]any{"path": "/tmp/bin", "data_base64": base64.StdEncoding.EncodeToString([]byte{0xff, 0xfe, 0})})
		te := c.fail("read_file", map[string]any{"path": "/tmp/bin"})
		if te.Code != codeNotUTF8 || !strings.Contains(te.Recovery, "download_file") {
			t.Errorf("error %+v", te)
		}
		c.ok("write_file", map[string]any{"path": "/tmp/big", "content": strings.Repeat("x", 1001)})
		te = c.fail("read_file", map[string]any{"path": "/tmp/big"})
		if te.Code != codeTooLarge || !strings.Contains(te.Recovery, "download_file") {
			t.Errorf("error %+v", te)
		}
		c.ok("write_file", map[string]any{"path": "/tmp/edge", "content": strings.Repeat("x", 1000)})
		c.ok("read_file", map[string]any{"path": "/tmp/edge"})
	})
	t.Run("FILE-3 list with depth", func(t *testing.T) {
		out := c.ok("list_files", map[string]any{"path": "/tmp/deep"})
		entries := out["entries"].([]any)
		if len(entries) != 1 || entries[0].(map[string]any)["name"] != "er" || entries[0].(map[string]any)["type"] != "directory" {
			t.Errorf("depth 1: %v", entries)
		}
		out = c.ok("list_files", map[string]any{"path": "/tmp/deep", "depth": 2})
		var paths []string
		for _, e := range out["entries"].([]any) {
			m := e.(map[string]any)
			paths = append(paths, m["path"].(string)+":"+m["type"].(string))
		}
		slices.Sort(paths)
		if !slices.Equal(paths, []string{"/tmp/deep/er/f.txt:file", "/tmp/deep/er:directory"}) {
			t.Errorf("depth 2: %v", paths)
		}
	})
	t.Run("FILE-4 missing path is not_found", func(t *testing.T) {
		for _, tool := range []string{"read_file", "list_files", "download_file"} {
			if te := c.fail(tool, map[string]any{"path": "/no/such/path"}); te.Category != sandbox.NotFound {
				t.Errorf("%s: %+v", tool, te)
			}
		}
	})
}

func TestBinaryTransfer(t *testing.T) {
	h := newHarness(t, nil)
	c := h.connect()
	data := make([]byte, 128<<10)
	_, _ = rand.Read(data)
	sum := sha256.Sum256(data)
	t.Run("BIN-1 upload", func(t *testing.T) {
		out := c.ok("upload_file", map[string]any{"path": "/tmp/blob", "data_base64": base64.StdEncoding.EncodeToString(data)})
		if out["size"] != float64(len(data)) || out["sha256"] != hex.EncodeToString(sum[:]) {
			t.Errorf("upload %v", out)
		}
	})
	t.Run("BIN-2 download round-trips exactly", func(t *testing.T) {
		out := c.ok("download_file", map[string]any{"path": "/tmp/blob"})
		got, err := base64.StdEncoding.Strict().DecodeString(out["data_base64"].(string))
		if err != nil || !bytes.Equal(got, data) || out["sha256"] != hex.EncodeToString(sum[:]) || out["truncated"] != false || out["size"] != float64(len(data)) {
			t.Errorf("download differs (err %v, truncated %v)", err, out["truncated"])
		}
	})
	t.Run("BIN-2 max_bytes", func(t *testing.T) {
		out := c.ok("download_file", map[string]any{"path": "/tmp/blob", "max_bytes": 10})
		got, _ := base64.StdEncoding.DecodeString(out["data_base64"].(string))
		s := sha256.Sum256(data[:10])
		if !bytes.Equal(got, data[:10]) || out["truncated"] != true || out["size"] != float64(10) || out["sha256"] != hex.EncodeToString(s[:]) {
			t.Errorf("download %v", out)
		}
	})
	t.Run("BIN-1 empty file", func(t *testing.T) {
		c.ok("upload_file", map[string]any{"path": "/tmp/empty", "data_base64": ""})
		out := c.ok("download_file", map[string]any{"path": "/tmp/empty"})
		if out["size"] != float64(0) || out["data_base64"] != "" {
			t.Errorf("download %v", out)
		}
	})
}

// download_file's result goes to the SDK as a value, not as its JSON (see
// textMirrored): a secret in it is scrubbed from the structured content as
// from the text block, and the two still agree (TOOLS-3).
func TestDownloadResultScrubbed(t *testing.T) {
	h := newHarness(t, nil)
	c := h.connect()
	path := "/tmp/" + h.fp.APIKey() + ".bin"
	c.ok("upload_file", map[string]any{"path": path, "data_base64": "AAEC"})
	res, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "download_file", Arguments: map[string]any{"path": path}})
	if err != nil || res.IsError {
		t.Fatalf("download_file: %v %v", err, res)
	}
	if s := resultJSON(t, res); strings.Contains(s, h.fp.APIKey()) || strings.Count(s, redacted) != 2 {
		t.Errorf("not scrubbed in both forms: %s", s)
	}
	checkTextMatchesStructured(t, "download_file", res)
	// Without a secret in it, the value passes as itself.
	c.ok("upload_file", map[string]any{"path": "/tmp/plain.bin", "data_base64": "AAEC"})
	res, err = c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "download_file", Arguments: map[string]any{"path": "/tmp/plain.bin"}})
	if err != nil || res.IsError {
		t.Fatalf("download_file: %v %v", err, res)
	}
	if m, _ := res.StructuredContent.(map[string]any); m["data_base64"] != "AAEC" || m["size"] != float64(3) {
		t.Errorf("structured content %v", res.StructuredContent)
	}
	checkTextMatchesStructured(t, "download_file", res)
}

func TestBinaryTransferCap(t *testing.T) {
	h := newHarness(t, &harnessOptions{limits: Limits{TransferBytes: 10}})
	c := h.connect()
	n := h.fp.Journal().Len()
	te := c.fail("upload_file", map[string]any{"path": "/tmp/x", "data_base64": base64.StdEncoding.EncodeToString(make([]byte, 11))})
	if te.Field != "data_base64" || te.Category != sandbox.InvalidArgument {
		t.Errorf("error %+v", te)
	}
	if got := journalFrom(h.fp, n); len(got) != 0 {
		t.Errorf("requests %v", ops(got))
	}
	c.ok("upload_file", map[string]any{"path": "/tmp/x", "data_base64": base64.StdEncoding.EncodeToString(make([]byte, 10))})
	if te := c.fail("download_file", map[string]any{"path": "/tmp/x", "max_bytes": 11}); te.Field != "max_bytes" {
		t.Errorf("error %+v", te)
	}
}

// readAll reads a background command from the start until it ends,
// max_bytes at a time, and returns stdout, stderr and the exit code.
func readAll(t *testing.T, c *client, id any, maxBytes int) (string, string, float64) {
	t.Helper()
	var stdout, stderr strings.Builder
	cursor := ""
	deadline := time.Now().Add(2 * time.Minute) // a hang guard only
	for time.Now().Before(deadline) {
		args := map[string]any{"command_id": id, "max_bytes": maxBytes}
		if cursor != "" {
			args["cursor"] = cursor
		}
		out := c.ok("get_background_command", args)
		stdout.WriteString(out["stdout"].(string))
		stderr.WriteString(out["stderr"].(string))
		if out["running"] == true && out["exit_code"] != nil {
			t.Errorf("BG-2: exit_code %v while running", out["exit_code"])
		}
		cursor = out["next_cursor"].(string)
		if out["running"] == false && out["truncated"] == false {
			code, _ := out["exit_code"].(float64)
			return stdout.String(), stderr.String(), code
		}
		if out["stdout"] == "" && out["stderr"] == "" {
			time.Sleep(10 * time.Millisecond)
		}
	}
	t.Fatal("background command did not finish")
	return "", "", 0
}

func TestBackgroundCommands(t *testing.T) {
	h := newHarness(t, nil)
	c := h.connect()
	t.Run("BG-1 BG-2 cursor reads lose and repeat nothing", func(t *testing.T) {
		// BG-1: the command waits for a gate this test opens only after the
		// start returned, so a start that waited for the command would hang.
		out := c.ok("start_background_command", map[string]any{"command": "seq 1 300; while [ ! -e /tmp/bg-gate ]; do sleep 0.01; done; seq 301 600; seq 1 50 >&2; exit 7"})
		if !strings.HasPrefix(out["command_id"].(string), "bg-") || out["sandbox_id"] == "" {
			t.Errorf("result %v", out)
		}
		c.ok("run_command", map[string]any{"sandbox_id": out["sandbox_id"], "command": "touch /tmp/bg-gate"})
		stdout, stderr, code := readAll(t, c, out["command_id"], 97)
		var want strings.Builder
		for i := 1; i <= 600; i++ {
			fmt.Fprintf(&want, "%d\n", i)
		}
		if stdout != want.String() {
			t.Errorf("stdout has %d bytes, want %d", len(stdout), want.Len())
		}
		var wantErr strings.Builder
		for i := 1; i <= 50; i++ {
			fmt.Fprintf(&wantErr, "%d\n", i)
		}
		if stderr != wantErr.String() || code != 7 {
			t.Errorf("stderr %q code %v", stderr, code)
		}
	})
	t.Run("BG-3 kill", func(t *testing.T) {
		id := c.ok("start_background_command", map[string]any{"command": "sleep 3600"})["command_id"] // only the kill ends it
		out := c.ok("kill_background_command", map[string]any{"command_id": id, "signal": "SIGKILL"})
		if b, _ := json.Marshal(out); string(b) != `{"success":true}` {
			t.Errorf("result %s", b)
		}
		waitFor(t, "killed command to end", func() bool {
			return c.ok("get_background_command", map[string]any{"command_id": id})["running"] == false
		})
		// Killing a finished command again is still a success.
		c.ok("kill_background_command", map[string]any{"command_id": id})
	})
	t.Run("BG-3 BG-4 unknown and foreign IDs are not_found", func(t *testing.T) {
		id := c.ok("start_background_command", map[string]any{"command": "sleep 5"})["command_id"]
		other := h.connect()
		n := h.fp.Journal().Len()
		for _, tool := range []string{"get_background_command", "kill_background_command"} {
			te := other.fail(tool, map[string]any{"command_id": id})
			if te.Category != sandbox.NotFound || te.Field != "command_id" {
				t.Errorf("%s from another session: %+v", tool, te)
			}
		}
		if got := journalFrom(h.fp, n); len(got) != 0 {
			t.Errorf("foreign calls made requests %v", ops(got))
		}
		other.close()
		c.ok("kill_background_command", map[string]any{"command_id": id})
	})
	t.Run("cursor beyond the output", func(t *testing.T) {
		id := c.ok("start_background_command", map[string]any{"command": "echo x"})["command_id"]
		if te := c.fail("get_background_command", map[string]any{"command_id": id, "cursor": "999999.0"}); te.Field != "cursor" {
			t.Errorf("error %+v", te)
		}
	})
	t.Run("close releases the commands", func(t *testing.T) {
		c.ok("start_background_command", map[string]any{"command": "sleep 30"})
		c.close()
		if h.fp.LiveCount() != 0 {
			t.Errorf("%d live", h.fp.LiveCount())
		}
	})
}

func TestBackgroundCommandLimit(t *testing.T) {
	h := newHarness(t, &harnessOptions{limits: Limits{BackgroundCommands: 2}})
	c := h.connect()
	a := c.ok("start_background_command", map[string]any{"command": "sleep 30"})["command_id"]
	c.ok("start_background_command", map[string]any{"command": "sleep 30"})
	if te := c.fail("start_background_command", map[string]any{"command": "sleep 30"}); te.Code != codeTooMany {
		t.Errorf("error %+v", te)
	}
	c.ok("kill_background_command", map[string]any{"command_id": a, "signal": "SIGKILL"})
	waitFor(t, "killed command to end", func() bool {
		return c.ok("get_background_command", map[string]any{"command_id": a})["running"] == false
	})
	c.ok("start_background_command", map[string]any{"command": "true"})
	c.close()
}
