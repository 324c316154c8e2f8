package fakeenvd

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/sandboxkit/sandboxkit/internal/envdapi"
)

// fuzzRoutes are the daemon's routes a fuzzed request may take, with the
// content type its body is sent as.
var fuzzRoutes = []struct {
	method, path, contentType string
	stream                    bool
}{
	{http.MethodGet, "/files", "", false},
	{http.MethodPost, "/files", "application/octet-stream", false},
	{http.MethodPost, "/files", "multipart/form-data; boundary=B", false},
	{http.MethodGet, "/health", "", false},
	{http.MethodPost, envdapi.FilesystemStatProcedure, "application/json", false},
	{http.MethodPost, envdapi.FilesystemListDirProcedure, "application/json", false},
	{http.MethodPost, envdapi.FilesystemMakeDirProcedure, "application/json", false},
	{http.MethodPost, envdapi.FilesystemRemoveProcedure, "application/json", false},
	{http.MethodPost, envdapi.FilesystemMoveProcedure, "application/json", false},
	{http.MethodPost, envdapi.ProcessListProcedure, "application/json", false},
	{http.MethodPost, envdapi.ProcessSendInputProcedure, "application/json", false},
	{http.MethodPost, envdapi.ProcessSendSignalProcedure, "application/json", false},
	{http.MethodPost, envdapi.ProcessCloseStdinProcedure, "application/json", false},
	{http.MethodPost, envdapi.ProcessStartProcedure, "application/connect+json", true},
	{http.MethodPost, envdapi.ProcessConnectProcedure, "application/connect+json", true},
	{http.MethodPost, "/unknown.Service/Method", "application/json", false},
}

// cappedRecorder keeps the status and the first bytes of a response, so
// that a command that writes forever costs no memory.
type cappedRecorder struct {
	header http.Header
	status int
	body   bytes.Buffer
	total  int
}

func (c *cappedRecorder) Header() http.Header { return c.header }
func (c *cappedRecorder) WriteHeader(s int) {
	if c.status == 0 {
		c.status = s
	}
}
func (c *cappedRecorder) Write(p []byte) (int, error) {
	c.WriteHeader(http.StatusOK)
	c.total += len(p)
	if room := 64<<10 - c.body.Len(); room > 0 {
		c.body.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
func (c *cappedRecorder) Flush() {}

// FuzzDaemonRequest sends arbitrary requests to a fresh fake daemon: any
// route, query and body, framed as its route expects. The daemon must
// never panic, must finish within the request's deadline (a command that
// runs forever is cut off with its stream), and must answer with a status
// envd uses, Connect errors in Connect's JSON shape.
func FuzzDaemonRequest(f *testing.F) {
	seeds := []struct {
		route uint8
		query string
		body  string
	}{
		{0, "path=/etc/hostname&username=user", ""},
		{0, "path=~/missing", ""},
		{0, "path=%2F..%2F..%2Fetc", ""},
		{0, "", ""},
		{1, "path=/tmp/a.txt", "hello"},
		{1, "path=/tmp/../tmp/b&username=root", "x"},
		{1, "path=/", "x"},
		{2, "path=/tmp/m", "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"m\"\r\n\r\ndata\r\n--B--\r\n"},
		{2, "path=/tmp/m", "--B\r\nbroken"},
		{3, "", ""},
		{4, "", `{"path":"/tmp"}`},
		{5, "", `{"path":"/","depth":3}`},
		{5, "", `{"path":"/tmp","depth":-1}`},
		{6, "", `{"path":"/tmp/x/y/z"}`},
		{7, "", `{"path":"/tmp/nothing"}`},
		{8, "", `{"source":"/tmp","destination":"/tmp/sub"}`},
		{9, "", `{}`},
		{10, "", `{"process":{"pid":1},"input":{"stdin":"aGk="}}`},
		{11, "", `{"process":{"tag":"t"},"signal":"SIGNAL_SIGKILL"}`},
		{12, "", `{"process":{"pid":99}}`},
		{13, "", `{"process":{"cmd":"/bin/bash","args":["-l","-c","echo hi; ls /; cat /etc/hostname"]}}`},
		{13, "", `{"process":{"cmd":"/bin/bash","args":["-l","-c","yes | head -c 100000"]}}`},
		{13, "", `{"process":{"cmd":"/bin/bash","args":["-l","-c","sleep 100"]},"stdin":true}`},
		{13, "", `{"process":{"cmd":"/bin/bash","args":["-l","-c","for i in 1 2 3; do echo $i >&2; done; exit 4"]},"tag":"t"}`},
		{13, "", `{"process":{"cmd":"/bin/bash","args":["-l","-c","$(("}}`},
		{13, "", `{"process":{"cmd":"python3","args":["-c","print(1)"],"cwd":"/tmp","envs":{"A":"b"}}}`},
		{14, "", `{"process":{"pid":1}}`},
		{15, "", `{}`},
		{4, "", `{"path":`},
		{13, "", `not json`},
	}
	for _, s := range seeds {
		f.Add(s.route, s.query, []byte(s.body), true)
	}
	f.Fuzz(func(t *testing.T, route uint8, query string, body []byte, frame bool) {
		rt := fuzzRoutes[int(route)%len(fuzzRoutes)]
		before := runtime.NumGoroutine()
		d := New(Config{SandboxID: "fuzz"})
		defer func() {
			// Close ends every process the request started: none of
			// their goroutines may outlive it.
			d.Close()
			for deadline := time.Now().Add(hangGuard); runtime.NumGoroutine() > before; {
				if time.Now().After(deadline) {
					buf := make([]byte, 1<<16)
					t.Fatalf("%d goroutines outlive the daemon's Close (%d before):\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
				}
				time.Sleep(time.Millisecond)
			}
		}()
		payload := body
		if rt.stream && frame {
			// A Connect streaming request is one enveloped message.
			env := make([]byte, 5, 5+len(body))
			binary.BigEndian.PutUint32(env[1:], uint32(len(body)))
			payload = append(env, body...)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		req := httptest.NewRequestWithContext(ctx, rt.method, "http://envd.fuzz"+rt.path, bytes.NewReader(payload))
		req.URL.RawQuery = query
		if rt.contentType != "" {
			req.Header.Set("Content-Type", rt.contentType)
		}
		req.Header.Set("Authorization", "Basic dXNlcjo=") // user "user"
		rec := &cappedRecorder{header: http.Header{}}
		done := make(chan struct{})
		go func() {
			defer close(done)
			d.ServeHTTP(rec, req)
		}()
		select {
		case <-done:
		case <-time.After(hangGuard):
			t.Fatalf("%s %s?%s: no answer %v after the request's deadline", rt.method, rt.path, query, hangGuard)
		}
		status := rec.status
		if status == 0 {
			status = http.StatusOK
		}
		switch {
		case status == 200, status == 204, status >= 400 && status < 500, status == 501, status == 507:
		case status == 500 && rt.path == "/files":
			// envd answers 500 for a form it cannot parse or a path it
			// cannot open or write, and so does the fake.
		default:
			t.Fatalf("%s %s?%s %q: status %d: %s", rt.method, rt.path, query, body, status, rec.body.Bytes())
		}
		if status != 200 && !rt.stream && rec.header.Get("Content-Type") == "application/json" {
			var e map[string]any
			if err := json.Unmarshal(rec.body.Bytes(), &e); err != nil {
				t.Fatalf("error body %q is not JSON", rec.body.Bytes())
			}
		}
	})
}
