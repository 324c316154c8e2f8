//go:build linux

package nsexec

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// waitForPort dials port until something listens there; the test's own
// deadline bounds the wait.
func waitForPort(t *testing.T, s *Sandbox, port int) {
	t.Helper()
	for {
		c, err := s.DialPort(context.Background(), port)
		if err == nil {
			c.Close()
			return
		}
		if !errors.Is(err, ErrPortClosed) {
			t.Fatalf("DialPort(%d): %v", port, err)
		}
	}
}

// TestDialPortReachesALoopbackServer: a server a process in the sandbox
// starts on its loopback answers through DialPort, and a port nothing
// listens on says so.
func TestDialPortReachesALoopbackServer(t *testing.T) {
	s := startSandbox(t)
	_, err := s.DialPort(context.Background(), 8000)
	if !errors.Is(err, ErrPortClosed) {
		t.Fatalf("DialPort before the server: %v, want ErrPortClosed", err)
	}
	if !strings.Contains(err.Error(), "nothing listens on port 8000") {
		t.Errorf("DialPort before the server: %q does not say nothing listens", err)
	}
	res, err := s.run(context.Background(), "/bin/bash", "-c",
		"mkdir -p /home/user/site && echo served-from-the-sandbox > /home/user/site/hello.txt && "+
			"cd /home/user/site && (python3 -m http.server 8000 --bind 127.0.0.1 >/dev/null 2>&1 &)")
	if err != nil || res.code != 0 {
		t.Fatalf("starting the server: %v %+v", err, res)
	}
	waitForPort(t, s, 8000)
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return s.DialPort(ctx, 8000) },
	}}
	resp, err := client.Get("http://8000-sbx-test.sandboxkit.test/hello.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(body) != "served-from-the-sandbox\n" {
		t.Errorf("GET /hello.txt: %d %q", resp.StatusCode, body)
	}
}

// TestDialPortAfterClose: a closed sandbox has no ports.
func TestDialPortAfterClose(t *testing.T) {
	s := startSandbox(t)
	s.Close()
	if _, err := s.DialPort(context.Background(), 49983); !errors.Is(err, ErrPortClosed) {
		t.Fatalf("DialPort after Close: %v, want ErrPortClosed", err)
	}
}

// TestCodeInterpreterRunsRealProcesses: port 49999 of a sandbox serves
// the code interpreter, whose python context is a real python3 process
// of the default user that keeps its state between cells.
func TestCodeInterpreterRunsRealProcesses(t *testing.T) {
	s := startSandbox(t)
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return s.DialPort(ctx, 49999) },
	}}
	execute := func(code string) string {
		t.Helper()
		resp, err := client.Post("http://49999-sbx-test.sandboxkit.test/execute", "application/json", strings.NewReader(code))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("POST /execute: %d %s", resp.StatusCode, body)
		}
		return string(body)
	}
	out := execute(`{"code": "import os, sys\nn = 6\nprint(os.getuid(), os.getcwd(), sys.executable)\nn * 7"}`)
	for _, want := range []string{`"text":"1000 /home/user /usr/bin/python3\n"`, `{"is_main_result":true,"text":"42","type":"result"}`, `{"type":"end_of_execution"}`} {
		if !strings.Contains(out, want) {
			t.Errorf("first cell: %s lacks %s", out, want)
		}
	}
	out = execute(`{"code": "n + 1"}`)
	if !strings.Contains(out, `"text":"7"`) || !strings.Contains(out, `"execution_count":2`) {
		t.Errorf("second cell: %s, want the state kept (7) and count 2", out)
	}
}

// BenchmarkDialPort measures one connection to a server on the sandbox's
// loopback (the code interpreter's port) through the port socket.
func BenchmarkDialPort(b *testing.B) {
	s := benchSandbox(b)
	b.Cleanup(s.Close)
	for b.Loop() {
		c, err := s.DialPort(context.Background(), 49999)
		if err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}

// BenchmarkPythonCell measures one /execute of `1` in a warm python
// context: a request through DialPort to a real python3 kernel process.
func BenchmarkPythonCell(b *testing.B) {
	s := benchSandbox(b)
	b.Cleanup(s.Close)
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return s.DialPort(ctx, 49999) },
	}}
	cell := func() {
		resp, err := client.Post("http://sandbox/execute", "application/json", strings.NewReader(`{"code": "1"}`))
		if err != nil {
			b.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), "end_of_execution") {
			b.Fatalf("stream %s", body)
		}
	}
	cell() // starts the kernel process
	for b.Loop() {
		cell()
	}
}
