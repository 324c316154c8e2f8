package fakeprovider_test

import (
	"strings"
	"testing"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
)

// TestProvider_CodeInterpreterRouting: port 49999 reaches the sandbox's
// in-process code interpreter by header (the SDK on E2B_SANDBOX_URL) and by
// host, acts on that sandbox (bash writes the file envd then serves), and
// gets the edge's 502 answers like envd.
func TestProvider_CodeInterpreterRouting(t *testing.T) {
	f := newFixture(t, nil)
	a := f.p.AddSandbox(fakeprovider.SandboxSeed{})
	b := f.p.AddSandbox(fakeprovider.SandboxSeed{})
	killed := f.p.AddSandbox(fakeprovider.SandboxSeed{})
	f.do("DELETE", "/sandboxes/"+killed, nil)
	domain, _ := f.p.Domain(a)
	byHeader := func(id string) map[string]string {
		return map[string]string{"E2b-Sandbox-Id": id, "E2b-Sandbox-Port": "49999", "Content-Type": "application/json"}
	}

	res := f.doWith("POST", "https://ignored.example/execute", map[string]any{"code": "print('py')\n6 * 7"}, byHeader(a))
	if res.status != 200 || !strings.Contains(string(res.body), `"text":"py\n"`) || !strings.Contains(string(res.body), `"text":"42"`) ||
		!strings.HasSuffix(string(res.body), "{\"type\":\"end_of_execution\"}\n") {
		t.Fatalf("python by header: %d %s", res.status, res.body)
	}
	res = f.doWith("POST", "https://ignored.example/execute", map[string]any{"code": "echo $E2B_SANDBOX_ID > /tmp/ci.txt", "language": "bash"},
		map[string]string{"Host": "49999-" + b + "." + domain})
	if res.status != 200 || strings.Contains(string(res.body), `"type":"error"`) {
		t.Fatalf("bash by host: %d %s", res.status, res.body)
	}
	got := f.doWith("GET", "https://ignored.example/files?path=/tmp/ci.txt", nil, map[string]string{"E2b-Sandbox-Id": b})
	if got.status != 200 || string(got.body) != b+"\n" {
		t.Errorf("envd of %s reads %d %q, want the file bash wrote there", b, got.status, got.body)
	}
	if miss := f.doWith("GET", "https://ignored.example/files?path=/tmp/ci.txt", nil, map[string]string{"E2b-Sandbox-Id": a}); miss.status == 200 {
		t.Errorf("the file also appeared in sandbox %s", a)
	}
	if n := len(f.p.Journal().Calls("POST /execute")); n != 2 {
		t.Errorf("journal has %d POST /execute entries, want 2", n)
	}

	res = f.doWith("POST", "https://ignored.example/execute", map[string]any{"code": "1"}, byHeader(killed))
	wantEdgeError(t, f.p, res, killed, "The sandbox was not found", 0)
}

// TestProvider_CodeInterpreterWithoutSupport: a daemon that cannot serve a
// code interpreter leaves port 49999 closed.
func TestProvider_CodeInterpreterWithoutSupport(t *testing.T) {
	ds := &daemons{}
	f := newFixture(t, &fakeprovider.Options{NewDaemon: ds.new})
	id := f.p.AddSandbox(fakeprovider.SandboxSeed{})
	res := f.doWith("POST", "https://x/execute", map[string]any{"code": "1"}, map[string]string{"E2b-Sandbox-Id": id, "E2b-Sandbox-Port": "49999"})
	wantEdgeError(t, f.p, res, id, "The sandbox is running but port is not open", 49999)
}

// TestProvider_CodeInterpreterCanaryErrors: with canaries, the code
// interpreter's error text carries the fake's canary like its other errors;
// its stream does not change.
func TestProvider_CodeInterpreterCanaryErrors(t *testing.T) {
	f := newFixture(t, &fakeprovider.Options{Canaries: true})
	id := f.p.AddSandbox(fakeprovider.SandboxSeed{})
	h := map[string]string{"E2b-Sandbox-Id": id, "E2b-Sandbox-Port": "49999"}
	res := f.doWith("POST", "https://x/execute", map[string]any{"code": "1", "context_id": "nope"}, h)
	if res.status != 404 || !strings.HasPrefix(string(res.body), "Context nope not found (request https://api.canary-") {
		t.Errorf("404 body %q", res.body)
	}
	res = f.doWith("POST", "https://x/execute", map[string]any{"code": "6 * 7"}, h)
	if res.status != 200 || !strings.Contains(string(res.body), `"text":"42"`) || strings.Contains(string(res.body), "canary") {
		t.Errorf("stream %d %q", res.status, res.body)
	}
}

// TestProvider_CodeInterpreterFault: a fault may name the interpreter's
// /execute; it answers that route of the sandbox it names only, with the
// fake's error body (a canary with Canaries), and a cleared fault lets the
// stream through again.
func TestProvider_CodeInterpreterFault(t *testing.T) {
	f := newFixture(t, &fakeprovider.Options{Canaries: true})
	a := f.p.AddSandbox(fakeprovider.SandboxSeed{})
	b := f.p.AddSandbox(fakeprovider.SandboxSeed{})
	h := func(id string) map[string]string {
		return map[string]string{"E2b-Sandbox-Id": id, "E2b-Sandbox-Port": "49999", "Content-Type": "application/json"}
	}
	fault := f.p.InjectFault(fakeprovider.Fault{Op: fakeprovider.OpCodeInterpreterExecute, SandboxID: a, Status: 502})
	res := f.doWith("POST", "https://x/execute", map[string]any{"code": "6 * 7"}, h(a))
	if _, leaked := f.p.FindCanary(string(res.body)); res.status != 502 || !leaked {
		t.Errorf("faulted /execute: %d %q, want 502 with a canary", res.status, res.body)
	}
	if res := f.doWith("POST", "https://x/execute", map[string]any{"code": "6 * 7"}, h(b)); res.status != 200 {
		t.Errorf("the other sandbox's /execute met the fault: %d %q", res.status, res.body)
	}
	if fault.Hits() != 1 {
		t.Errorf("fault hits %d, want 1", fault.Hits())
	}
	fault.Clear()
	if res := f.doWith("POST", "https://x/execute", map[string]any{"code": "6 * 7"}, h(a)); res.status != 200 || !strings.Contains(string(res.body), `"text":"42"`) {
		t.Errorf("after Clear: %d %q", res.status, res.body)
	}
}
