package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/sandboxkit/sandboxkit/internal/envdapi"
)

// Canary strings: none of them may ever appear in an error's text.
const (
	canaryDomain  = "canary-domain-5d1e.example"
	canaryToken   = "canary-token-a8c2f0"
	canaryMessage = "canary-daemon-message-77e1"
	canaryPath    = "/canary-path-b3d9/file"
)

// envdTestSandbox builds a handle as Create would, whose daemon is reached
// through client: at sandboxURL when it is set, else at
// https://49983-<id>.<domain>.
func envdTestSandbox(t testing.TB, client *http.Client, sandboxURL, id, domain, token string) *Sandbox {
	t.Helper()
	p, err := NewPlatform(&Options{HTTPClient: client, Getenv: func(string) string { return "" },
		UserAgent: "sandboxkit-test", RequestTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	pc := ProviderConfig{ID: DefaultProviderID, APIURL: "https://api." + domain, Domain: domain, APIKeyEnv: EnvAPIKey, SandboxURL: sandboxURL}
	return &Sandbox{platform: p, ep: endpoint{provider: pc, apiURL: pc.APIURL}, id: QualifiedID{Provider: DefaultProviderID, ID: id},
		envdAccessToken: token, domain: domain}
}

// hostRouter sends requests for one daemon host name to a loopback server,
// keeping the Host header, the way DNS and the platform's edge would.
type hostRouter struct {
	host   string // "49983-<id>.<domain>"
	target *url.URL
	base   http.RoundTripper
}

func (h *hostRouter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Host != h.host || r.URL.Scheme != "https" {
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, fmt.Errorf("hostRouter: no route to %s://%s", r.URL.Scheme, r.URL.Host)
	}
	r2 := r.Clone(r.Context())
	r2.URL.Scheme, r2.URL.Host = h.target.Scheme, h.target.Host
	r2.Host = h.host
	return h.base.RoundTrip(r2)
}

// assertNoLeak fails when err's text holds any canary or URL-like text.
func assertNoLeak(t testing.TB, err error, extra ...string) {
	t.Helper()
	if err == nil {
		return
	}
	msg := err.Error()
	for _, c := range append([]string{canaryDomain, canaryToken, canaryMessage, canaryPath, "http://", "https://", "127.0.0.1", "49983-"}, extra...) {
		if c != "" && strings.Contains(msg, c) {
			t.Errorf("error text %q contains %q", msg, c)
		}
	}
}

// wantError checks that err is an *Error with op and category.
func wantError(t testing.TB, err error, op string, cat Category) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a *sandbox.Error", err, err)
	}
	if e.Op != op || e.Category != cat {
		t.Fatalf("error = %q (op %q, category %s), want op %q, category %s", e.Error(), e.Op, e.Category, op, cat)
	}
	assertNoLeak(t, err)
	return e
}

// headerRecorder is a stub daemon that records request headers and answers
// Stat and Start with connect handlers.
type headerRecorder struct {
	mu   sync.Mutex
	seen map[string]http.Header // by path
	host map[string]string
}

func (hr *headerRecorder) handler() http.Handler {
	mux := http.NewServeMux()
	codec := connect.WithCodec(envdapi.Codec{})
	mux.Handle(envdapi.FilesystemStatProcedure, connect.NewUnaryHandler(envdapi.FilesystemStatProcedure,
		func(ctx context.Context, r *connect.Request[envdapi.StatRequest]) (*connect.Response[envdapi.StatResponse], error) {
			return connect.NewResponse(&envdapi.StatResponse{Entry: &envdapi.EntryInfo{Name: "x", Path: r.Msg.Path, Type: envdapi.FileTypeFile}}), nil
		}, codec))
	mux.Handle(envdapi.ProcessStartProcedure, connect.NewServerStreamHandler(envdapi.ProcessStartProcedure,
		func(ctx context.Context, r *connect.Request[envdapi.StartRequest], s *connect.ServerStream[envdapi.StartResponse]) error {
			_ = s.Send(&envdapi.StartResponse{Event: envdapi.ProcessEvent{Start: &envdapi.StartEvent{Pid: 7}}})
			_ = s.Send(&envdapi.StartResponse{Event: envdapi.ProcessEvent{Keepalive: &struct{}{}}})
			_ = s.Send(&envdapi.StartResponse{Event: envdapi.ProcessEvent{Data: &envdapi.DataEvent{Stdout: []byte("hi\n")}}})
			return s.Send(&envdapi.StartResponse{Event: envdapi.ProcessEvent{End: &envdapi.EndEvent{ExitCode: 3, Exited: true, Status: "exit status 3"}}})
		}, codec))
	mux.HandleFunc("GET /files", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "data") })
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hr.mu.Lock()
		hr.seen[r.Method+" "+r.URL.Path] = r.Header.Clone()
		hr.host[r.Method+" "+r.URL.Path] = r.Host
		hr.mu.Unlock()
		mux.ServeHTTP(w, r)
	})
}

func TestEnvd_HeadersAndRouting(t *testing.T) {
	hr := &headerRecorder{seen: map[string]http.Header{}, host: map[string]string{}}
	srv := httptest.NewServer(hr.handler())
	defer srv.Close()
	target, _ := url.Parse(srv.URL)
	const id = "sbxHeaders1"
	host := "49983-" + id + "." + canaryDomain

	modes := []struct {
		name       string
		sandboxURL string
		client     *http.Client
		wantHost   string
	}{
		{"sandbox_url", srv.URL, srv.Client(), target.Host},
		{"host_pattern", "", &http.Client{Transport: &hostRouter{host: host, target: target, base: srv.Client().Transport}}, host},
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			clear(hr.seen)
			sb := envdTestSandbox(t, m.client, m.sandboxURL, id, canaryDomain, canaryToken)
			e := sb.Envd(&EnvdOptions{User: "root", KeepaliveInterval: 30 * time.Second})
			ctx := context.Background()
			if _, err := e.Stat(ctx, "a.txt"); err != nil {
				t.Fatal(err)
			}
			out, err := e.RunOutput(ctx, "echo hi", nil)
			if err != nil {
				t.Fatal(err)
			}
			if string(out.Stdout) != "hi\n" || out.ExitCode != 3 || !out.Exited || out.Pid != 7 {
				t.Fatalf("RunOutput = %+v", out)
			}
			data, _, err := e.ReadFile(ctx, "a.txt", 10)
			if err != nil || string(data) != "data" {
				t.Fatalf("ReadFile = %q, %v", data, err)
			}

			hr.mu.Lock()
			defer hr.mu.Unlock()
			for _, path := range []string{OpFilesystemStat, OpProcessStart, OpFilesDownload} {
				h := hr.seen[path]
				if h == nil {
					t.Fatalf("%s not seen", path)
				}
				if got := h.Get("X-Access-Token"); got != canaryToken {
					t.Errorf("%s: X-Access-Token = %q", path, got)
				}
				if got := h.Get("User-Agent"); got != "sandboxkit-test" {
					t.Errorf("%s: User-Agent = %q", path, got)
				}
				if hr.host[path] != m.wantHost {
					t.Errorf("%s: Host = %q, want %q", path, hr.host[path], m.wantHost)
				}
				wantID, wantPort := "", ""
				if m.sandboxURL != "" {
					wantID, wantPort = id, "49983"
				}
				if h.Get("E2b-Sandbox-Id") != wantID || h.Get("E2b-Sandbox-Port") != wantPort {
					t.Errorf("%s: sandbox headers %q %q", path, h.Get("E2b-Sandbox-Id"), h.Get("E2b-Sandbox-Port"))
				}
			}
			for _, path := range []string{OpFilesystemStat, OpProcessStart} {
				if got := hr.seen[path].Get("Authorization"); got != "Basic cm9vdDo=" { // root:
					t.Errorf("%s: Authorization = %q", path, got)
				}
			}
			if got := hr.seen[OpProcessStart].Get("Keepalive-Ping-Interval"); got != "30" {
				t.Errorf("stream Keepalive-Ping-Interval = %q", got)
			}
			if got := hr.seen[OpFilesystemStat].Get("Keepalive-Ping-Interval"); got != "" {
				t.Errorf("unary call carries Keepalive-Ping-Interval %q", got)
			}
		})
	}
}

func TestEnvd_NoTokenNoHeader(t *testing.T) {
	hr := &headerRecorder{seen: map[string]http.Header{}, host: map[string]string{}}
	srv := httptest.NewServer(hr.handler())
	defer srv.Close()
	e := envdTestSandbox(t, srv.Client(), srv.URL, "sbx2", canaryDomain, "").Envd(nil)
	if _, err := e.Stat(context.Background(), "/x"); err != nil {
		t.Fatal(err)
	}
	h := hr.seen[OpFilesystemStat]
	if _, ok := h["X-Access-Token"]; ok {
		t.Errorf("X-Access-Token sent without a token")
	}
	if got := h.Get("Authorization"); got != "Basic dXNlcjo=" { // user:
		t.Errorf("default Authorization = %q", got)
	}
}

// codeServer answers every unary filesystem call and Start with a Connect
// error of the code named by the path's last element given in Stat.
func codeServer(t *testing.T) *httptest.Server {
	codec := connect.WithCodec(envdapi.Codec{})
	mux := http.NewServeMux()
	fail := func(path string) error {
		var code connect.Code
		name, msg, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
		if err := code.UnmarshalText([]byte(name)); err != nil {
			return connect.NewError(connect.CodeInternal, errors.New("bad test code"))
		}
		return connect.NewError(code, errors.New(canaryMessage+" "+canaryPath+" "+msg))
	}
	mux.Handle(envdapi.FilesystemStatProcedure, connect.NewUnaryHandler(envdapi.FilesystemStatProcedure,
		func(ctx context.Context, r *connect.Request[envdapi.StatRequest]) (*connect.Response[envdapi.StatResponse], error) {
			return nil, fail(r.Msg.Path)
		}, codec))
	mux.Handle(envdapi.ProcessStartProcedure, connect.NewServerStreamHandler(envdapi.ProcessStartProcedure,
		func(ctx context.Context, r *connect.Request[envdapi.StartRequest], s *connect.ServerStream[envdapi.StartResponse]) error {
			switch r.Msg.Process.Cmd {
			case "nostart":
				return s.Send(&envdapi.StartResponse{Event: envdapi.ProcessEvent{Data: &envdapi.DataEvent{Stdout: []byte("x")}}})
			case "noend":
				return s.Send(&envdapi.StartResponse{Event: envdapi.ProcessEvent{Start: &envdapi.StartEvent{Pid: 9}}})
			case "midfail":
				_ = s.Send(&envdapi.StartResponse{Event: envdapi.ProcessEvent{Start: &envdapi.StartEvent{Pid: 9}}})
				return fail("/unavailable")
			}
			return fail(r.Msg.Process.Cmd)
		}, codec))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		_, _ = io.WriteString(w, "<html>"+canaryMessage+" "+canaryDomain+"</html>")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestEnvd_ConnectCodeCategories(t *testing.T) {
	srv := codeServer(t)
	e := envdTestSandbox(t, srv.Client(), srv.URL, "sbx3", canaryDomain, canaryToken).Envd(nil)
	ctx := context.Background()
	tests := []struct {
		path string
		cat  Category
		code string
	}{
		{"/not_found", NotFound, "not_found"},
		{"/invalid_argument", InvalidArgument, "invalid_argument"},
		{"/unauthenticated", Unauthenticated, "unauthenticated"},
		{"/permission_denied", PermissionDenied, "permission_denied"},
		{"/already_exists", Conflict, "already_exists"},
		{"/failed_precondition", Conflict, "failed_precondition"},
		{"/aborted", Conflict, "aborted"},
		{"/resource_exhausted/too many requests", RateLimited, "resource_exhausted"},
		{"/resource_exhausted/not enough disk space available", ProviderError, "insufficient_storage"},
		{"/unavailable", Unavailable, "unavailable"},
		{"/deadline_exceeded", Timeout, "deadline_exceeded"},
		{"/canceled", Unavailable, "canceled"},
		{"/internal", ProviderError, "internal"},
		{"/unknown", ProviderError, "unknown"},
		{"/unimplemented", ProviderError, "unimplemented"},
		{"/data_loss", ProviderError, "data_loss"},
		{"/out_of_range", ProviderError, "out_of_range"},
	}
	for _, tt := range tests {
		_, err := e.Stat(ctx, tt.path)
		got := wantError(t, err, OpFilesystemStat, tt.cat)
		if got.Code != tt.code {
			t.Errorf("%s: code %q, want %q", tt.path, got.Code, tt.code)
		}
	}
	// Streams carry the same mapping, in the end frame.
	_, err := e.StartProcess(ctx, &ProcessConfig{Cmd: "/permission_denied"})
	wantError(t, err, OpProcessStart, PermissionDenied)
	_, err = e.StartProcess(ctx, &ProcessConfig{Cmd: "nostart"})
	if got := wantError(t, err, OpProcessStart, ProviderError); got.Code != "missing_start_event" {
		t.Errorf("code %q", got.Code)
	}
	_, err = e.Run(ctx, "x", nil) // cmd is /bin/bash: the stub answers "bad test code" as internal
	wantError(t, err, OpProcessStart, ProviderError)

	st, err := e.StartProcess(ctx, &ProcessConfig{Cmd: "noend"})
	if err != nil {
		t.Fatal(err)
	}
	for st.Receive() {
	}
	if got := wantError(t, st.Err(), OpProcessStart, ProviderError); got.Code != "missing_end_event" {
		t.Errorf("code %q", got.Code)
	}
	st.Close()
	st, err = e.StartProcess(ctx, &ProcessConfig{Cmd: "midfail"})
	if err != nil {
		t.Fatal(err)
	}
	for st.Receive() {
	}
	wantError(t, st.Err(), OpProcessStart, Unavailable)
	st.Close()

	// A reply that is not Connect at all (an edge's HTML 502).
	e2 := envdTestSandbox(t, srv.Client(), srv.URL+"/edge", "sbx3", canaryDomain, canaryToken).Envd(nil)
	_, err = e2.ListProcesses(ctx)
	wantError(t, err, OpProcessList, Unavailable)
	_, err = e2.Download(ctx, "/x")
	if got := wantError(t, err, OpFilesDownload, Unavailable); got.HTTPStatus != 502 {
		t.Errorf("http status %d", got.HTTPStatus)
	}
}

func TestEnvd_ContextErrors(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(block)
	e := envdTestSandbox(t, srv.Client(), srv.URL, "sbx4", canaryDomain, canaryToken).Envd(nil)

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := e.Stat(ctx, "/x")
	wantError(t, err, OpFilesystemStat, Timeout)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("errors.Is(err, DeadlineExceeded) = false")
	}

	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err = e.Download(ctx, "/x")
	wantError(t, err, OpFilesDownload, Unavailable)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("errors.Is(err, Canceled) = false")
	}

	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err = e.StartBackground(ctx, "sleep 10", nil)
	wantError(t, err, OpProcessStart, Unavailable)

	// Refused connections are unavailable too.
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	e = envdTestSandbox(t, http.DefaultClient, deadURL, "sbx4", canaryDomain, canaryToken).Envd(nil)
	_, err = e.Stat(context.Background(), "/x")
	wantError(t, err, OpFilesystemStat, Unavailable)
	_, err = e.Upload(context.Background(), "/x", strings.NewReader("abc"))
	wantError(t, err, OpFilesUpload, Unavailable)
}

func TestEnvd_ClientSideValidation(t *testing.T) {
	e := envdTestSandbox(t, http.DefaultClient, "http://127.0.0.1:1", "sbx5", canaryDomain, "").Envd(nil)
	ctx := context.Background()
	check := func(err error, op, field string) {
		t.Helper()
		got := wantError(t, err, op, InvalidArgument)
		if got.Field != field {
			t.Errorf("field %q, want %q", got.Field, field)
		}
	}
	_, err := e.Run(ctx, "", nil)
	check(err, OpProcessStart, "command")
	_, err = e.Run(ctx, "true", &CommandOptions{Timeout: -1})
	check(err, OpProcessStart, "timeout")
	_, err = e.StartBackground(ctx, "true", &BackgroundOptions{BufferLimit: -1})
	check(err, OpProcessStart, "buffer_limit")
	check(e.SendSignal(ctx, 1, Signal("SIGHUP")), OpProcessSendSignal, "signal")
	check(e.SendInput(ctx, 0, nil), OpProcessSendInput, "pid")
	_, err = e.ListDir(ctx, "/", -1)
	check(err, OpFilesystemListDir, "depth")
	_, err = e.Stat(ctx, "")
	check(err, OpFilesystemStat, "path")
	_, err = e.Move(ctx, "a", "")
	check(err, OpFilesystemMove, "destination")
	_, _, err = e.ReadFile(ctx, "a", 0)
	check(err, OpFilesDownload, "limit")
	_, err = e.Upload(ctx, "a", nil)
	check(err, OpFilesUpload, "r")
}

func TestRingBuffer(t *testing.T) {
	var all bytes.Buffer
	r := ringBuffer{limit: 10}
	write := func(s string) {
		r.write([]byte(s))
		all.WriteString(s)
	}
	held := func() string {
		from, _ := r.clamp(0)
		return string(r.read(from, r.end-from))
	}
	write("abc")
	if held() != "abc" {
		t.Fatalf("held %q", held())
	}
	write("defghij")
	write("kl")
	if got, want := held(), all.String()[all.Len()-10:]; got != want {
		t.Fatalf("held %q, want %q", got, want)
	}
	write("0123456789ABCDEF") // longer than the limit
	if got := held(); got != "6789ABCDEF" {
		t.Fatalf("held %q", got)
	}
	for i := range 1000 {
		write(strings.Repeat(string(rune('a'+i%26)), i%13))
		if got, want := held(), all.String()[max(0, all.Len()-10):]; got != want {
			t.Fatalf("step %d: held %q, want %q", i, got, want)
		}
	}
	if r.end != int64(all.Len()) || len(r.buf) != 10 {
		t.Fatalf("end %d (want %d), capacity %d", r.end, all.Len(), len(r.buf))
	}
}

// TestEnvdCodec_FastPathMatchesJSON checks that the output-event fast path
// decodes exactly what encoding/json decodes, and defers to it otherwise.
func TestEnvdCodec_FastPathMatchesJSON(t *testing.T) {
	all := make([]byte, 256*3)
	for i := range all {
		all[i] = byte(i)
	}
	var inputs [][]byte
	for _, ev := range []envdapi.ProcessEvent{
		{Data: &envdapi.DataEvent{Stdout: all}},
		{Data: &envdapi.DataEvent{Stderr: all[:1]}},
		{Data: &envdapi.DataEvent{Stdout: all[:2]}},
		{Data: &envdapi.DataEvent{Stdout: []byte("a"), Stderr: []byte("b")}},
		{Data: &envdapi.DataEvent{Pty: []byte("p")}},
		{Start: &envdapi.StartEvent{Pid: 3}},
		{End: &envdapi.EndEvent{ExitCode: 2, Exited: true, Status: "exit status 2"}},
		{Keepalive: &struct{}{}},
	} {
		b, err := json.Marshal(envdapi.StartResponse{Event: ev})
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, b)
	}
	inputs = append(inputs,
		[]byte(`{"event":{"data":{"stdout":""}}}`),
		[]byte(`{"event":{"data":{"stdout":"YWJj\u0064"}}}`), // an escape: general path
		[]byte(`{"event":{"data":{"stdout":"YW Jj"}}}`),      // not base64
		[]byte(`{"event":{"data":{"stdout":"YWJ"}}}`),        // unpadded
		[]byte(`{"event":{"data":{"stdout":"YWJj\nZA=="}}}`), // raw newline: invalid JSON
		[]byte(`{"event":{"data":{"stdout":"YWJj"}}}x`),
		[]byte(`{"event":{"data":{"other":"YWJj"}}}`),
	)
	for _, i := range []int{0, 1, 2, 8} {
		if _, ok := decodeDataEvent(inputs[i]); !ok {
			t.Errorf("fast path not taken for %.60s", inputs[i])
		}
	}
	codec := envdCodec{}
	for _, in := range inputs {
		for _, fresh := range []func() (any, any){
			func() (any, any) { return new(envdapi.StartResponse), new(envdapi.StartResponse) },
			func() (any, any) { return new(envdapi.ConnectResponse), new(envdapi.ConnectResponse) },
		} {
			got, want := fresh()
			gotErr := codec.Unmarshal(in, got)
			wantErr := json.Unmarshal(in, want)
			if (gotErr == nil) != (wantErr == nil) {
				t.Errorf("%s: error %v, encoding/json %v", in, gotErr, wantErr)
				continue
			}
			if gotErr == nil && !reflect.DeepEqual(got, want) {
				t.Errorf("%s: decoded %+v, encoding/json %+v", in, got, want)
			}
		}
	}
}

func TestEnvd_DownloadBodyFailures(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100000")
		_, _ = io.WriteString(w, strings.Repeat("x", 1000))
		w.(http.Flusher).Flush()
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	defer srv.Close()
	e := envdTestSandbox(t, srv.Client(), srv.URL, "sbx6", canaryDomain, canaryToken).Envd(nil)
	ctx := context.Background()
	n, err := e.DownloadTo(ctx, canaryPath, io.Discard)
	if got := wantError(t, err, OpFilesDownload, Unavailable); got.HTTPStatus != 0 || n != 1000 {
		t.Errorf("status %d, %d bytes", got.HTTPStatus, n)
	}
	_, _, err = e.ReadFile(ctx, canaryPath, 1<<20)
	wantError(t, err, OpFilesDownload, Unavailable)
	rc, err := e.Download(ctx, canaryPath)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(rc)
	rc.Close()
	wantError(t, err, OpFilesDownload, Unavailable)

	// A failing writer is the caller's fault, named as such.
	_, err = e.DownloadTo(ctx, canaryPath, errWriter{})
	if got := wantError(t, err, OpFilesDownload, Internal); got.Field != "w" {
		t.Errorf("field %q", got.Field)
	}
}

type errWriter struct{}

func (errWriter) Write([]byte) (int, error) { return 0, errors.New("no") }
