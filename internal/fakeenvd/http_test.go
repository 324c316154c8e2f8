package fakeenvd

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/sandboxkit/sandboxkit/internal/envdapi"
)

// env is a daemon behind a real HTTP server.
type env struct {
	d   *Daemon
	srv *httptest.Server
}

func newEnv(t *testing.T, cfg Config) *env {
	t.Helper()
	d := newDaemon(t, cfg)
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	return &env{d: d, srv: srv}
}

// headers are added to every call.
type headers map[string]string

func (h headers) apply(dst http.Header) {
	for k, v := range h {
		dst.Set(k, v)
	}
}

func call[Req, Res any](t *testing.T, e *env, procedure string, req *Req, h headers) (*Res, error) {
	t.Helper()
	c := connect.NewClient[Req, Res](e.srv.Client(), e.srv.URL+procedure, connect.WithCodec(envdapi.Codec{}))
	r := connect.NewRequest(req)
	h.apply(r.Header())
	res, err := c.CallUnary(context.Background(), r)
	if err != nil {
		return nil, err
	}
	return res.Msg, nil
}

func startStream(t *testing.T, ctx context.Context, e *env, req *envdapi.StartRequest, h headers) *connect.ServerStreamForClient[envdapi.StartResponse] {
	t.Helper()
	c := connect.NewClient[envdapi.StartRequest, envdapi.StartResponse](e.srv.Client(), e.srv.URL+envdapi.ProcessStartProcedure, connect.WithCodec(envdapi.Codec{}))
	r := connect.NewRequest(req)
	h.apply(r.Header())
	st, err := c.CallServerStream(ctx, r)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	return st
}

// drain reads a stream to its end and returns stdout, the end event and
// the number of keepalives.
func drain(t *testing.T, st interface {
	Receive() bool
	Err() error
}, msg func() envdapi.ProcessEvent) (string, *envdapi.EndEvent, int) {
	t.Helper()
	return drainEvents(t, st, msg, func(envdapi.ProcessEvent) {})
}

// drainOpening drains a Start stream, calling seen on each event as it
// arrives (to open gates the process waits on).
func drainOpening(t *testing.T, st *connect.ServerStreamForClient[envdapi.StartResponse], seen func(envdapi.ProcessEvent)) (string, *envdapi.EndEvent, int) {
	t.Helper()
	return drainEvents(t, st, func() envdapi.ProcessEvent { return st.Msg().Event }, seen)
}

func drainEvents(t *testing.T, st interface {
	Receive() bool
	Err() error
}, msg func() envdapi.ProcessEvent, seen func(envdapi.ProcessEvent)) (string, *envdapi.EndEvent, int) {
	t.Helper()
	var out bytes.Buffer
	var end *envdapi.EndEvent
	keepalives := 0
	for st.Receive() {
		ev := msg()
		seen(ev)
		switch {
		case ev.Data != nil:
			out.Write(ev.Data.Stdout)
			out.Write(ev.Data.Stderr)
		case ev.End != nil:
			end = ev.End
		case ev.Keepalive != nil:
			keepalives++
		}
	}
	if err := st.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	return out.String(), end, keepalives
}

// TestHTTPStartStreamsIncrementally checks that each output event arrives
// while the process still runs: the script prints a line, then waits for
// a gate file that the test writes only after it has received that line,
// so a stream that held output back until the end would never see it (the
// context bounds that hang).
func TestHTTPStartStreamsIncrementally(t *testing.T) {
	e := newEnv(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	script := "for i in 1 2 3; do echo $i; while [ ! -e /tmp/gate-$i ]; do sleep 0.01; done; done; exit 4"
	st := startStream(t, ctx, e, bashReq(script), nil)
	defer st.Close()
	var data []string
	first := true
	var end *envdapi.EndEvent
	for st.Receive() {
		ev := st.Msg().Event
		if first {
			if ev.Start == nil || ev.Start.Pid != firstPID {
				t.Fatalf("first event %+v", ev)
			}
			first = false
			continue
		}
		if ev.Data != nil {
			data = append(data, string(ev.Data.Stdout))
			// The process waits on this gate: the line came while it ran.
			e.d.FS().WriteFile("/tmp/gate-"+strings.TrimSpace(string(ev.Data.Stdout)), nil, 0o644)
		}
		if ev.End != nil {
			end = ev.End
		}
	}
	if err := st.Err(); err != nil {
		t.Fatalf("%v (output so far %q: a line held back until the end never opens its gate)", err, data)
	}
	if strings.Join(data, "") != "1\n2\n3\n" || len(data) != 3 {
		t.Fatalf("data %q, want three events 1, 2, 3", data)
	}
	if end == nil || end.ExitCode != 4 || !end.Exited {
		t.Fatalf("end %+v", end)
	}
}

func TestHTTPWireFormat(t *testing.T) {
	e := newEnv(t, Config{})
	e.d.FS().WriteFile("/home/user/five", []byte("12345"), 0o644)
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+envdapi.FilesystemStatProcedure, strings.NewReader(`{"path":"five"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept-Encoding", "gzip")
	res, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("Content-Encoding") != "" {
		t.Fatalf("status %d encoding %q", res.StatusCode, res.Header.Get("Content-Encoding"))
	}
	for _, want := range []string{`"size":"5"`, `"type":"FILE_TYPE_FILE"`, `"path":"/home/user/five"`, `"permissions":"-rw-r--r--"`, `"mode":420`, `"owner":"user"`, `"modifiedTime":"`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("body %s lacks %s", body, want)
		}
	}
	// A raw streaming request: envelopes with flags 0, then end-of-stream 2.
	msg := []byte(`{"process":{"cmd":"/bin/bash","args":["-l","-c","echo hi"]},"stdin":false}`)
	env := append([]byte{0, 0, 0, 0, byte(len(msg))}, msg...)
	req, _ = http.NewRequest(http.MethodPost, e.srv.URL+envdapi.ProcessStartProcedure, bytes.NewReader(env))
	req.Header.Set("Content-Type", "application/connect+json")
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var frames []string
	for len(raw) >= 5 {
		n := int(raw[1])<<24 | int(raw[2])<<16 | int(raw[3])<<8 | int(raw[4])
		frames = append(frames, fmt.Sprintf("%d %s", raw[0], raw[5:5+n]))
		raw = raw[5+n:]
	}
	want := []string{`0 {"event":{"start":{"pid":1000}}}`, `0 {"event":{"data":{"stdout":"aGkK"}}}`,
		`0 {"event":{"end":{"exited":true,"status":"exit status 0"}}}`, `2 {}`}
	if strings.Join(frames, "\n") != strings.Join(want, "\n") {
		t.Fatalf("frames:\n%s", strings.Join(frames, "\n"))
	}
}

func TestHTTPProcessRPCs(t *testing.T) {
	e := newEnv(t, Config{})
	// Bounds every stream: a hang fails the test instead of stalling it.
	ctx := guardCtx(t)
	req := bashReq("while read line; do echo got $line; done; echo eof")
	req.Stdin, req.Tag = ptr(true), ptr("reader")
	st := startStream(t, ctx, e, req, nil)
	defer st.Close()
	if !st.Receive() || st.Msg().Event.Start == nil {
		t.Fatal("no start event")
	}
	pid := st.Msg().Event.Start.Pid
	list, err := call[envdapi.ListRequest, envdapi.ListResponse](t, e, envdapi.ProcessListProcedure, &envdapi.ListRequest{}, nil)
	if err != nil || len(list.Processes) != 1 || list.Processes[0].Pid != pid || deref(list.Processes[0].Tag) != "reader" {
		t.Fatalf("list %+v %v", list, err)
	}
	sel := envdapi.ProcessSelector{Tag: ptr("reader")}
	if _, err := call[envdapi.SendInputRequest, envdapi.SendInputResponse](t, e, envdapi.ProcessSendInputProcedure,
		&envdapi.SendInputRequest{Process: sel, Input: envdapi.ProcessInput{Stdin: []byte("one\ntwo\n")}}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := call[envdapi.CloseStdinRequest, envdapi.CloseStdinResponse](t, e, envdapi.ProcessCloseStdinProcedure,
		&envdapi.CloseStdinRequest{Process: envdapi.ProcessSelector{Pid: &pid}}, nil); err != nil {
		t.Fatal(err)
	}
	out, end, _ := drain(t, st, func() envdapi.ProcessEvent { return st.Msg().Event })
	if out != "got one\ngot two\neof\n" || end == nil || end.ExitCode != 0 {
		t.Fatalf("out %q end %+v", out, end)
	}

	// Errors carry Connect codes.
	missing := envdapi.ProcessSelector{Pid: ptr(uint32(4242))}
	_, err = call[envdapi.SendSignalRequest, envdapi.SendSignalResponse](t, e, envdapi.ProcessSendSignalProcedure,
		&envdapi.SendSignalRequest{Process: missing, Signal: envdapi.SignalSIGTERM}, nil)
	if connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("signal missing pid: %v", err)
	}
	_, err = call[envdapi.SendInputRequest, envdapi.SendInputResponse](t, e, envdapi.ProcessSendInputProcedure,
		&envdapi.SendInputRequest{Process: envdapi.ProcessSelector{Tag: ptr("nope")}, Input: envdapi.ProcessInput{Stdin: []byte("x")}}, nil)
	if connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("input missing tag: %v", err)
	}

	// SendSignal over RPC stops a sleeping process; Connect attaches to it.
	// The sleep outlasts the hang guard: only the signal ends it.
	st = startStream(t, ctx, e, bashReq("echo up; sleep 3600; echo after"), nil)
	defer st.Close()
	st.Receive()
	pid = st.Msg().Event.Start.Pid
	st.Receive() // "up"
	cc := connect.NewClient[envdapi.ConnectRequest, envdapi.ConnectResponse](e.srv.Client(), e.srv.URL+envdapi.ProcessConnectProcedure, connect.WithCodec(envdapi.Codec{}))
	cs, err := cc.CallServerStream(ctx, connect.NewRequest(&envdapi.ConnectRequest{Process: envdapi.ProcessSelector{Pid: &pid}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if !cs.Receive() || cs.Msg().Event.Start == nil || cs.Msg().Event.Start.Pid != pid {
		t.Fatalf("connect first event %+v %v", cs.Msg(), cs.Err())
	}
	_, err = call[envdapi.SendSignalRequest, envdapi.SendSignalResponse](t, e, envdapi.ProcessSendSignalProcedure,
		&envdapi.SendSignalRequest{Process: envdapi.ProcessSelector{Pid: &pid}, Signal: 0}, nil)
	if connect.CodeOf(err) != connect.CodeUnimplemented {
		t.Fatalf("unspecified signal: %v", err)
	}
	if _, err := call[envdapi.SendSignalRequest, envdapi.SendSignalResponse](t, e, envdapi.ProcessSendSignalProcedure,
		&envdapi.SendSignalRequest{Process: envdapi.ProcessSelector{Pid: &pid}, Signal: envdapi.SignalSIGTERM}, nil); err != nil {
		t.Fatal(err)
	}
	out, end, _ = drain(t, cs, func() envdapi.ProcessEvent { return cs.Msg().Event })
	if end == nil || end.Status != "signal: terminated" || end.ExitCode != -1 || out != "" {
		t.Fatalf("connect end %+v output %q", end, out)
	}
	_, end, _ = drain(t, st, func() envdapi.ProcessEvent { return st.Msg().Event })
	if end == nil || end.Status != "signal: terminated" {
		t.Fatalf("start end %+v", end)
	}
	// Connecting to a finished process fails with not_found.
	cs, err = cc.CallServerStream(context.Background(), connect.NewRequest(&envdapi.ConnectRequest{Process: envdapi.ProcessSelector{Pid: &pid}}))
	if err == nil {
		for cs.Receive() {
		}
		err = cs.Err()
	}
	if connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("connect to ended process: %v", err)
	}
}

func TestHTTPStreamLifecycle(t *testing.T) {
	e := newEnv(t, Config{})
	ctx := guardCtx(t)
	// Keepalives at the requested interval (seconds): the process waits for
	// a gate the test opens on the first keepalive, so without keepalives
	// the stream would hang until the guard.
	st := startStream(t, ctx, e, bashReq(gateWait("keepalive")+"; echo done"), headers{envdapi.KeepaliveHeader: "1"})
	out, end, keepalives := drainOpening(t, st, func(ev envdapi.ProcessEvent) {
		if ev.Keepalive != nil {
			openGate(t, e.d, "keepalive")
		}
	})
	st.Close()
	if out != "done\n" || end == nil || end.ExitCode != 0 || keepalives < 1 {
		t.Fatalf("out %q end %+v keepalives %d", out, end, keepalives)
	}
	// The client going away does not stop the process: it writes its marker
	// only after a gate the test opens once the stream is gone.
	sctx, scancel := context.WithCancel(ctx)
	st = startStream(t, sctx, e, bashReq(gateWait("gone")+"; echo finished > /tmp/marker"), nil)
	st.Receive()
	scancel()
	st.Close()
	openGate(t, e.d, "gone")
	waitFor(t, func() bool {
		b, err := e.d.FS().ReadFile("/tmp/marker")
		return err == nil && string(b) == "finished\n"
	})
	// A deadline on Start (Connect-Timeout-Ms, sent as the header alone so
	// the daemon, not the client, acts on it) kills the process: the sleep
	// outlasts the hang guard, so only the kill ends it, before its marker.
	st = startStream(t, ctx, e, bashReq("sleep 3600; echo late > /tmp/late"), headers{"Connect-Timeout-Ms": "200"})
	for st.Receive() {
	}
	if err := st.Err(); connect.CodeOf(err) != connect.CodeDeadlineExceeded {
		t.Fatalf("deadline stream error %v, want deadline_exceeded", err)
	}
	st.Close()
	waitFor(t, func() bool { return len(e.d.Processes()) == 0 })
	if _, err := e.d.FS().ReadFile("/tmp/late"); err == nil {
		t.Fatal("the command after the sleep ran: the deadline did not kill it")
	}
	// Bad requests.
	st = startStream(t, context.Background(), e, &envdapi.StartRequest{Process: envdapi.ProcessConfig{Cmd: "ls", Cwd: ptr("/nope")}}, nil)
	for st.Receive() {
	}
	if connect.CodeOf(st.Err()) != connect.CodeInvalidArgument || !strings.Contains(st.Err().Error(), "cwd '/nope' does not exist") {
		t.Fatalf("bad cwd: %v", st.Err())
	}
	// The user comes from Basic auth.
	basic := func(u string) headers {
		return headers{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte(u+":"))}
	}
	st = startStream(t, context.Background(), e, bashReq("whoami; pwd"), basic("root"))
	if out, _, _ := drain(t, st, func() envdapi.ProcessEvent { return st.Msg().Event }); out != "root\n/root\n" {
		t.Fatalf("root out %q", out)
	}
	st = startStream(t, context.Background(), e, bashReq("whoami"), basic("mallory"))
	for st.Receive() {
	}
	if connect.CodeOf(st.Err()) != connect.CodeUnauthenticated {
		t.Fatalf("unknown user: %v", st.Err())
	}
}

func TestHTTPFilesystemRPCs(t *testing.T) {
	e := newEnv(t, Config{})
	fsys := e.d.FS()
	fsys.MkdirAll("/home/user/tree/a/b", 0o755)
	fsys.WriteFile("/home/user/tree/a/b/deep.txt", []byte("deep"), 0o644)
	fsys.WriteFile("/home/user/tree/top.txt", []byte("top!!"), 0o600)
	fsys.SymlinkAs("a", "/home/user/tree/link", 1000, 1000)

	stat := func(p string) (*envdapi.EntryInfo, error) {
		res, err := call[envdapi.StatRequest, envdapi.StatResponse](t, e, envdapi.FilesystemStatProcedure, &envdapi.StatRequest{Path: p}, nil)
		if err != nil {
			return nil, err
		}
		return res.Entry, nil
	}
	ent, err := stat("tree/top.txt")
	if err != nil {
		t.Fatal(err)
	}
	if ent.Name != "top.txt" || ent.Path != "/home/user/tree/top.txt" || ent.Type != envdapi.FileTypeFile || ent.Size != 5 ||
		ent.Mode != 0o600 || ent.Permissions != "-rw-------" || ent.Owner != "user" || ent.Group != "user" || ent.ModifiedTime == nil {
		t.Fatalf("stat %+v", ent)
	}
	if ent, _ := stat("~/tree/link"); ent == nil || ent.Type != envdapi.FileTypeDirectory || deref(ent.SymlinkTarget) != "/home/user/tree/a" {
		t.Fatalf("symlink stat %+v", ent)
	}
	if _, err := stat("/nope"); connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("missing: %v", err)
	}
	if _, err := stat("~other/x"); connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatalf("~other: %v", err)
	}

	list := func(p string, depth uint32) ([]string, error) {
		res, err := call[envdapi.ListDirRequest, envdapi.ListDirResponse](t, e, envdapi.FilesystemListDirProcedure, &envdapi.ListDirRequest{Path: p, Depth: depth}, nil)
		if err != nil {
			return nil, err
		}
		var out []string
		for _, en := range res.Entries {
			out = append(out, strings.TrimPrefix(en.Path, "/home/user/tree/")+":"+en.Type.String()[len("FILE_TYPE_"):])
		}
		return out, nil
	}
	for _, tc := range []struct {
		depth uint32
		want  string
	}{
		{0, "[a:DIRECTORY link:DIRECTORY top.txt:FILE]"},
		{1, "[a:DIRECTORY link:DIRECTORY top.txt:FILE]"},
		{2, "[a:DIRECTORY a/b:DIRECTORY link:DIRECTORY top.txt:FILE]"},
		{5, "[a:DIRECTORY a/b:DIRECTORY a/b/deep.txt:FILE link:DIRECTORY top.txt:FILE]"},
	} {
		got, err := list("/home/user/tree", tc.depth)
		if err != nil || fmt.Sprint(got) != tc.want {
			t.Errorf("depth %d: %v %v, want %s", tc.depth, got, err, tc.want)
		}
	}
	// Listing through a symlink names entries under the requested path.
	if got, err := list("/home/user/tree/link", 1); err != nil || fmt.Sprint(got) != "[link/b:DIRECTORY]" {
		t.Errorf("list via symlink: %v %v", got, err)
	}
	if _, err := list("/nope", 1); connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("list missing: %v", err)
	}
	if _, err := list("/home/user/tree/top.txt", 1); connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatalf("list file: %v", err)
	}

	mkdir := func(p string) (*envdapi.EntryInfo, error) {
		res, err := call[envdapi.MakeDirRequest, envdapi.MakeDirResponse](t, e, envdapi.FilesystemMakeDirProcedure, &envdapi.MakeDirRequest{Path: p}, nil)
		if err != nil {
			return nil, err
		}
		return res.Entry, nil
	}
	if ent, err := mkdir("made/x/y"); err != nil || ent.Path != "/home/user/made/x/y" || ent.Type != envdapi.FileTypeDirectory || ent.Owner != "user" {
		t.Fatalf("mkdir %+v %v", ent, err)
	}
	for p, code := range map[string]connect.Code{
		"/home/user/made":             connect.CodeAlreadyExists,
		"/home/user/tree/top.txt":     connect.CodeInvalidArgument,
		"/home/user/tree/top.txt/sub": connect.CodeFailedPrecondition,
	} {
		if _, err := mkdir(p); connect.CodeOf(err) != code {
			t.Errorf("mkdir %s: %v, want %v", p, err, code)
		}
	}

	move := func(src, dst string) (*envdapi.EntryInfo, error) {
		res, err := call[envdapi.MoveRequest, envdapi.MoveResponse](t, e, envdapi.FilesystemMoveProcedure, &envdapi.MoveRequest{Source: src, Destination: dst}, nil)
		if err != nil {
			return nil, err
		}
		return res.Entry, nil
	}
	if ent, err := move("tree/top.txt", "moved/into/new/top2.txt"); err != nil || ent.Path != "/home/user/moved/into/new/top2.txt" || ent.Size != 5 {
		t.Fatalf("move %+v %v", ent, err)
	}
	if _, err := move("tree/top.txt", "x"); connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("move missing: %v", err)
	}
	if _, err := move("made", "tree"); connect.CodeOf(err) != connect.CodeFailedPrecondition {
		t.Fatalf("move onto non-empty dir: %v", err)
	}

	remove := func(p string) error {
		_, err := call[envdapi.RemoveRequest, envdapi.RemoveResponse](t, e, envdapi.FilesystemRemoveProcedure, &envdapi.RemoveRequest{Path: p}, nil)
		return err
	}
	if err := remove("tree"); err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.Stat("/home/user/tree/a/b/deep.txt"); err == nil {
		t.Fatal("tree still there")
	}
	if err := remove("/does/not/exist"); err != nil {
		t.Fatalf("removing a missing path: %v", err)
	}
	if err := remove("/"); connect.CodeOf(err) != connect.CodeFailedPrecondition {
		t.Fatalf("removing /: %v", err)
	}
}

// filesURL builds a /files URL.
func filesURL(e *env, q url.Values) string { return e.srv.URL + envdapi.FilesPath + "?" + q.Encode() }

func upload(t *testing.T, e *env, q url.Values, contentType string, body io.Reader, h headers) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, filesURL(e, q), body)
	req.Header.Set("Content-Type", contentType)
	h.apply(req.Header)
	res, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

func download(t *testing.T, e *env, q url.Values, h headers) (int, string, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, filesURL(e, q), nil)
	h.apply(req.Header)
	res, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header.Get("Content-Type"), b
}

func multipartBody(t *testing.T, files map[string][]byte) (string, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for name, data := range files {
		w, err := mw.CreateFormFile("file", name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(data)
	}
	mw.Close()
	return mw.FormDataContentType(), &buf
}

func TestHTTPFilesRoundTrip(t *testing.T) {
	e := newEnv(t, Config{})
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	big := make([]byte, 5<<20+17)
	rand.Read(big)

	for _, tc := range []struct {
		name string
		path string
		data []byte
		raw  bool
	}{
		{"all bytes raw", "/home/user/bin/all.bin", all, true},
		{"all bytes multipart", "rel/all.bin", all, false},
		{"big raw", "/tmp/big.bin", big, true},
		{"big multipart", "/tmp/deep/er/big2.bin", big, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := url.Values{"path": {tc.path}}
			var code int
			var body []byte
			if tc.raw {
				code, body = upload(t, e, q, "application/octet-stream", bytes.NewReader(tc.data), nil)
			} else {
				ct, b := multipartBody(t, map[string][]byte{"ignored-name": tc.data})
				code, body = upload(t, e, q, ct, b, nil)
			}
			abs := tc.path
			if !strings.HasPrefix(abs, "/") {
				abs = "/home/user/" + abs
			}
			var entries []envdapi.UploadedEntry
			if code != 200 || json.Unmarshal(body, &entries) != nil || len(entries) != 1 ||
				!reflect.DeepEqual(entries[0], envdapi.UploadedEntry{Path: abs, Name: abs[strings.LastIndex(abs, "/")+1:], Type: "file"}) {
				t.Fatalf("upload %d %s", code, body)
			}
			code, ct, got := download(t, e, q, nil)
			if code != 200 || ct != "application/octet-stream" || sha256.Sum256(got) != sha256.Sum256(tc.data) || len(got) != len(tc.data) {
				t.Fatalf("download %d %q %d bytes", code, ct, len(got))
			}
			if info, err := e.d.FS().Stat(abs); err != nil || info.Size() != int64(len(tc.data)) {
				t.Fatalf("fs stat %v %v", info, err)
			}
		})
	}
	// The shell sees uploaded bytes unchanged.
	r := run(t, e.d, "sha256sum /tmp/big.bin | cut -d' ' -f1")
	if want := fmt.Sprintf("%x\n", sha256.Sum256(big)); r.stdout != want {
		t.Fatalf("sha256sum in shell %q, want %q", r.stdout, want)
	}
	// Overwrite, and a multipart upload that takes paths from file names.
	upload(t, e, url.Values{"path": {"/tmp/big.bin"}}, "application/octet-stream", strings.NewReader("small"), nil)
	if _, _, got := download(t, e, url.Values{"path": {"/tmp/big.bin"}}, nil); string(got) != "small" {
		t.Fatalf("overwrite: %q", got)
	}
	ct, b := multipartBody(t, map[string][]byte{"/tmp/m/one.txt": []byte("1"), "two.txt": []byte("2")})
	code, body := upload(t, e, url.Values{}, ct, b, nil)
	if code != 200 || !strings.Contains(string(body), `"/tmp/m/one.txt"`) || !strings.Contains(string(body), `"/home/user/two.txt"`) {
		t.Fatalf("multipart by filename: %d %s", code, body)
	}
	// Uploads as root are owned by root.
	upload(t, e, url.Values{"path": {"/tmp/rootfile"}, "username": {"root"}}, "application/octet-stream", strings.NewReader("r"), nil)
	if info, _ := e.d.FS().Stat("/tmp/rootfile"); info == nil {
		t.Fatal("no root file")
	} else if uid, _ := ownerIDs(info); uid != 0 {
		t.Fatalf("owner uid %d", uid)
	}
}

func TestHTTPFilesErrors(t *testing.T) {
	e := newEnv(t, Config{DiskQuota: 1 << 20})
	e.d.FS().WriteFile("/home/user/f", []byte("x"), 0o644)
	for _, tc := range []struct {
		name   string
		do     func() (int, []byte)
		code   int
		body   string // exact JSON when it starts with "{", else substring
		sample string
	}{
		{name: "download missing", do: func() (int, []byte) {
			c, _, b := download(t, e, url.Values{"path": {"/x"}}, nil)
			return c, b
		}, code: 404, body: `{"code":404,"message":"path '/x' does not exist"}`},
		{name: "download directory", do: func() (int, []byte) {
			c, _, b := download(t, e, url.Values{"path": {"/tmp"}}, nil)
			return c, b
		}, code: 400, body: `{"code":400,"message":"path '/tmp' is a directory"}`},
		{name: "download unknown user", do: func() (int, []byte) {
			c, _, b := download(t, e, url.Values{"path": {"f"}, "username": {"mallory"}}, nil)
			return c, b
		}, code: 401, body: "error looking up user 'mallory'"},
		{name: "raw upload without path", do: func() (int, []byte) {
			return upload(t, e, url.Values{}, "application/octet-stream", strings.NewReader("x"), nil)
		}, code: 400, body: "path query parameter is required"},
		{name: "unsupported content type", do: func() (int, []byte) {
			return upload(t, e, url.Values{"path": {"a"}}, "text/plain", strings.NewReader("x"), nil)
		}, code: 400, body: "unsupported content type"},
		{name: "upload onto directory", do: func() (int, []byte) {
			return upload(t, e, url.Values{"path": {"/tmp"}}, "application/octet-stream", strings.NewReader("x"), nil)
		}, code: 400, body: "path is a directory"},
		{name: "upload under a file", do: func() (int, []byte) {
			return upload(t, e, url.Values{"path": {"/home/user/f/x"}}, "application/octet-stream", strings.NewReader("x"), nil)
		}, code: 500, body: "error ensuring directories"},
		{name: "quota raw", do: func() (int, []byte) {
			return upload(t, e, url.Values{"path": {"/tmp/huge"}}, "application/octet-stream", bytes.NewReader(make([]byte, 2<<20)), nil)
		}, code: 507, body: "not enough disk space available"},
		{name: "quota multipart", do: func() (int, []byte) {
			e.d.FS().RemoveAll("/tmp/huge")
			ct, b := multipartBody(t, map[string][]byte{"/tmp/huge2": make([]byte, 2<<20)})
			return upload(t, e, url.Values{}, ct, b, nil)
		}, code: 507, body: "not enough disk space available"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := tc.do()
			if code != tc.code {
				t.Fatalf("status %d, want %d (%s)", code, tc.code, body)
			}
			got := strings.TrimSpace(string(body))
			if strings.HasPrefix(tc.body, "{") && got != tc.body || !strings.Contains(got, strings.Trim(tc.body, "{}")) {
				t.Fatalf("body %s, want %s", got, tc.body)
			}
		})
	}
	if used, quota := e.d.FS().Usage(); used > quota {
		t.Fatalf("used %d > quota %d", used, quota)
	}
}

func TestHTTPAuth(t *testing.T) {
	const token = "s3cret"
	e := newEnv(t, Config{AccessToken: token})
	e.d.FS().WriteFile("/home/user/f.txt", []byte("data"), 0o644)
	withToken := headers{envdapi.AccessTokenHeader: token}
	unauthorized := `{"code":401,"message":"unauthorized access, please provide a valid access token or method signing if supported"}`

	get := func(path string, h headers) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, e.srv.URL+path, nil)
		h.apply(req.Header)
		res, err := e.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, strings.TrimSpace(string(b))
	}
	if code, _ := get(envdapi.HealthPath, nil); code != 204 {
		t.Fatalf("health without token: %d", code)
	}
	// RPCs need the header; without it envd answers plain HTTP 401 JSON.
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+envdapi.ProcessListProcedure, strings.NewReader("{}"))
	req.Header.Set("Content-Type", "application/json")
	res, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 401 || strings.TrimSpace(string(b)) != unauthorized {
		t.Fatalf("rpc without token: %d %s", res.StatusCode, b)
	}
	if _, err := call[envdapi.ListRequest, envdapi.ListResponse](t, e, envdapi.ProcessListProcedure, &envdapi.ListRequest{}, nil); connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Fatalf("connect client without token: %v", err)
	}
	if _, err := call[envdapi.ListRequest, envdapi.ListResponse](t, e, envdapi.ProcessListProcedure, &envdapi.ListRequest{}, headers{envdapi.AccessTokenHeader: "wrong"}); connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Fatalf("wrong token: %v", err)
	}
	if _, err := call[envdapi.ListRequest, envdapi.ListResponse](t, e, envdapi.ProcessListProcedure, &envdapi.ListRequest{}, withToken); err != nil {
		t.Fatalf("with token: %v", err)
	}

	// /files: the header or a signature.
	future, past := time.Now().Add(time.Hour).Unix(), time.Now().Add(-time.Hour).Unix()
	sig := func(p, op, user string, exp *int64) url.Values {
		q := url.Values{"path": {p}, "signature": {envdapi.FileSignature(p, op, user, token, exp)}}
		if user != "" {
			q.Set("username", user)
		}
		if exp != nil {
			q.Set("signature_expiration", fmt.Sprint(*exp))
		}
		return q
	}
	for _, tc := range []struct {
		name string
		q    url.Values
		h    headers
		code int
		msg  string
	}{
		{"no header no signature", url.Values{"path": {"f.txt"}}, nil, 401, "missing signature query parameter"},
		{"wrong header", url.Values{"path": {"f.txt"}}, headers{envdapi.AccessTokenHeader: "nope"}, 401, "access token present in header but does not match"},
		{"header", url.Values{"path": {"f.txt"}}, withToken, 200, "data"},
		{"signature", sig("f.txt", envdapi.SignRead, "", nil), nil, 200, "data"},
		{"signature with user", sig("f.txt", envdapi.SignRead, "user", nil), nil, 200, "data"},
		{"signature with expiration", sig("f.txt", envdapi.SignRead, "", &future), nil, 200, "data"},
		{"expired signature", sig("f.txt", envdapi.SignRead, "", &past), nil, 401, "signature is already expired"},
		{"write signature for read", sig("f.txt", envdapi.SignWrite, "", nil), nil, 401, "invalid signature"},
		{"signature for another path", func() url.Values { q := sig("other", envdapi.SignRead, "", nil); q.Set("path", "f.txt"); return q }(), nil, 401, "invalid signature"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := get(envdapi.FilesPath+"?"+tc.q.Encode(), tc.h)
			if code != tc.code || !strings.Contains(body, tc.msg) {
				t.Fatalf("%d %s, want %d %s", code, body, tc.code, tc.msg)
			}
		})
	}
	code, body := upload(t, e, sig("/tmp/up", envdapi.SignWrite, "", nil), "application/octet-stream", strings.NewReader("u"), nil)
	if code != 200 {
		t.Fatalf("signed upload %d %s", code, body)
	}
	if code, _ := upload(t, e, url.Values{"path": {"/tmp/up"}}, "application/octet-stream", strings.NewReader("u"), nil); code != 401 {
		t.Fatalf("unsigned upload %d", code)
	}
	// Uploads are scoped as downloads are: operation, expiry and path.
	for name, q := range map[string]url.Values{
		"read signature for an upload": sig("/tmp/up", envdapi.SignRead, "", nil),
		"expired upload signature":     sig("/tmp/up", envdapi.SignWrite, "", &past),
		"upload signature for another path": func() url.Values {
			q := sig("/tmp/other", envdapi.SignWrite, "", &future)
			q.Set("path", "/tmp/up")
			return q
		}(),
	} {
		if code, _ := upload(t, e, q, "application/octet-stream", strings.NewReader("u"), nil); code != 401 {
			t.Errorf("%s: %d, want 401", name, code)
		}
	}

	// Without a token nothing is required.
	open := newEnv(t, Config{})
	if _, err := call[envdapi.ListRequest, envdapi.ListResponse](t, open, envdapi.ProcessListProcedure, &envdapi.ListRequest{}, nil); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := download(t, open, url.Values{"path": {"/etc/hostname"}}, nil); code != 200 {
		t.Fatalf("open download %d", code)
	}
}

func TestHTTPClose(t *testing.T) {
	e := newEnv(t, Config{SandboxID: "sbx1"})
	// Close must not wait for the process: its sleep outlasts the guard.
	ctx := guardCtx(t)
	st := startStream(t, ctx, e, bashReq("echo up; sleep 3600"), nil)
	defer st.Close()
	st.Receive()
	st.Receive()
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		e.d.Close()
		e.d.Close() // idempotent
	}()
	select {
	case <-closed:
	case <-ctx.Done():
		t.Fatalf("Close still waits after %v", hangGuard)
	}
	// The stream is cut, as when the platform kills a sandbox's VM: no end
	// event, and the client sees a transport error, not a clean end.
	for st.Receive() {
		if st.Msg().Event.End != nil {
			t.Fatalf("end event %+v after Close; want the stream cut", st.Msg().Event.End)
		}
	}
	if err := st.Err(); err == nil || connect.CodeOf(err) == connect.CodeUnavailable {
		t.Fatalf("stream after Close: %v; want a dropped connection", err)
	}
	if len(e.d.Processes()) != 0 {
		t.Fatal("processes survive Close")
	}
	for _, path := range []string{envdapi.HealthPath, envdapi.FilesPath + "?path=/etc/hostname"} {
		res, err := e.srv.Client().Get(e.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusBadGateway || !strings.Contains(string(b), `"code":502`) {
			t.Fatalf("%s after close: %d %s", path, res.StatusCode, b)
		}
	}
	_, err := call[envdapi.ListRequest, envdapi.ListResponse](t, e, envdapi.ProcessListProcedure, &envdapi.ListRequest{}, nil)
	var ce *connect.Error
	if !errors.As(err, &ce) || ce.Code() != connect.CodeUnavailable {
		t.Fatalf("rpc after close: %v", err)
	}
}

// TestHTTPFileMetadata follows envd's X-Metadata-* handling (infra
// packages/envd/internal/api/upload.go, packages/shared/pkg/filesystem/
// xattr.go): keys lowercased, stored with the file, read back in the upload
// answer and every entry, replaced by each upload, validated (400).
func TestHTTPFileMetadata(t *testing.T) {
	e := newEnv(t, Config{})
	q := url.Values{"path": {"/tmp/m.txt"}}
	code, body := upload(t, e, q, "application/octet-stream", strings.NewReader("x"), headers{"X-Metadata-Owner": "ann", "X-Metadata-Build": "7"})
	var entries []envdapi.UploadedEntry
	want := map[string]string{"owner": "ann", "build": "7"}
	if code != 200 || json.Unmarshal(body, &entries) != nil || len(entries) != 1 || !reflect.DeepEqual(entries[0].Metadata, want) {
		t.Fatalf("upload %d %s", code, body)
	}
	st, err := call[envdapi.StatRequest, envdapi.StatResponse](t, e, envdapi.FilesystemStatProcedure, &envdapi.StatRequest{Path: "/tmp/m.txt"}, nil)
	if err != nil || !reflect.DeepEqual(st.Entry.Metadata, want) {
		t.Fatalf("stat %+v %v", st, err)
	}
	ls, err := call[envdapi.ListDirRequest, envdapi.ListDirResponse](t, e, envdapi.FilesystemListDirProcedure, &envdapi.ListDirRequest{Path: "/tmp"}, nil)
	if err != nil || len(ls.Entries) != 1 || !reflect.DeepEqual(ls.Entries[0].Metadata, want) {
		t.Fatalf("list %+v %v", ls, err)
	}
	// A multipart upload without headers clears it.
	ct, mp := multipartBody(t, map[string][]byte{"/tmp/m.txt": []byte("y")})
	if code, body := upload(t, e, url.Values{}, ct, mp, nil); code != 200 || strings.Contains(string(body), "metadata") {
		t.Fatalf("re-upload %d %s", code, body)
	}
	if info, _ := e.d.FS().Stat("/tmp/m.txt"); metadataOf(info) != nil {
		t.Fatalf("metadata survives a re-upload: %v", metadataOf(info))
	}
	code, body = upload(t, e, q, "application/octet-stream", strings.NewReader("z"), headers{"X-Metadata-K": "caf\u00e9"})
	if code != 400 || !strings.Contains(string(body), "invalid metadata: metadata value for key") {
		t.Fatalf("non-ASCII value: %d %s", code, body)
	}
}
