package nsexec

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/sandboxkit/sandboxkit/internal/envdapi"
	"github.com/sandboxkit/sandboxkit/internal/fakeenvd"
)

// backend builds one sandbox's envd as an http.Handler with a Close.
type backend struct {
	name string
	make func(t *testing.T, cfg fakeenvd.Config) interface {
		http.Handler
		Close()
	}
}

// backends are the memory backend always and the namespace backend where
// its probe passes (CI runs as root, so there); a failed probe skips with
// its reason.
func backends(t *testing.T) []backend {
	mem := backend{"memory", func(t *testing.T, cfg fakeenvd.Config) interface {
		http.Handler
		Close()
	} {
		return fakeenvd.New(cfg)
	}}
	ns := backend{"namespace", func(t *testing.T, cfg fakeenvd.Config) interface {
		http.Handler
		Close()
	} {
		s, err := Start(Options{}, cfg)
		if err != nil {
			t.Fatalf("start: %v", err)
		}
		return s
	}}
	if err := Probe(context.Background(), Options{}); err != nil {
		t.Logf("namespace backend skipped: %v", err)
		return []backend{mem}
	}
	return []backend{mem, ns}
}

// sbx is one sandbox under test behind a loopback HTTP server.
type sbx struct {
	t     *testing.T
	srv   *httptest.Server
	close func()
}

const testToken = "scenario-token"

func newSbx(t *testing.T, b backend) *sbx {
	d := b.make(t, fakeenvd.Config{SandboxID: "sbx-scenario", AccessToken: testToken})
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	t.Cleanup(d.Close)
	return &sbx{t: t, srv: srv, close: d.Close}
}

func (s *sbx) request(r interface{ Header() http.Header }) {
	r.Header().Set(envdapi.AccessTokenHeader, testToken)
}

func unary[Req, Res any](s *sbx, procedure string, req *Req) (*Res, error) {
	c := connect.NewClient[Req, Res](s.srv.Client(), s.srv.URL+procedure, connect.WithCodec(envdapi.Codec{}))
	r := connect.NewRequest(req)
	s.request(r)
	res, err := c.CallUnary(context.Background(), r)
	if err != nil {
		return nil, err
	}
	return res.Msg, nil
}

// proc is a started process's stream.
type proc struct {
	st     *connect.ServerStreamForClient[envdapi.StartResponse]
	pid    uint32
	stderr bytes.Buffer // kept apart: two pipes have no order between them
}

func (s *sbx) start(req *envdapi.StartRequest, timeoutMs string) (*proc, error) {
	c := connect.NewClient[envdapi.StartRequest, envdapi.StartResponse](s.srv.Client(), s.srv.URL+envdapi.ProcessStartProcedure, connect.WithCodec(envdapi.Codec{}))
	r := connect.NewRequest(req)
	s.request(r)
	if timeoutMs != "" {
		r.Header().Set("Connect-Timeout-Ms", timeoutMs)
	}
	st, err := c.CallServerStream(context.Background(), r)
	if err != nil {
		return nil, err
	}
	if !st.Receive() {
		return nil, st.Err()
	}
	if ev := st.Msg().Event.Start; ev != nil {
		return &proc{st: st, pid: ev.Pid}, nil
	}
	return nil, errors.New("first event is not start")
}

// wait collects output (stdout and pty; stderr goes to p.stderr) until
// the end event, or until says the output so far is enough.
func (p *proc) wait(until func(out string) bool) (string, *envdapi.EndEvent, error) {
	var out bytes.Buffer
	for p.st.Receive() {
		ev := p.st.Msg().Event
		if ev.Data != nil {
			out.Write(ev.Data.Stdout)
			out.Write(ev.Data.Pty)
			p.stderr.Write(ev.Data.Stderr)
			if until != nil && until(out.String()) {
				return out.String(), nil, nil
			}
		}
		if ev.End != nil {
			return out.String(), ev.End, nil
		}
	}
	return out.String(), nil, p.st.Err()
}

func bash(script string) *envdapi.StartRequest {
	return &envdapi.StartRequest{Process: envdapi.ProcessConfig{Cmd: "/bin/bash", Args: []string{"-l", "-c", script}}}
}

func (s *sbx) run(script string) (string, *envdapi.EndEvent) {
	out, _, end := s.runErr(script)
	return out, end
}

// runErr runs script and returns its stdout, stderr and end.
func (s *sbx) runErr(script string) (string, string, *envdapi.EndEvent) {
	s.t.Helper()
	p, err := s.start(bash(script), "")
	if err != nil {
		s.t.Fatalf("start %q: %v", script, err)
	}
	out, end, err := p.wait(nil)
	if err != nil || end == nil {
		s.t.Fatalf("run %q: %v", script, err)
	}
	return out, p.stderr.String(), end
}

// TestEnvdScenarios runs one table of envd scenarios against every
// backend: the same requests must get the same answers.
func TestEnvdScenarios(t *testing.T) {
	scenarios := []struct {
		name string
		run  func(t *testing.T, s *sbx)
	}{
		{"start: output and exit status", func(t *testing.T, s *sbx) {
			out, errOut, end := s.runErr("echo out; echo err >&2; exit 3")
			if out != "out\n" || errOut != "err\n" || end.ExitCode != 3 || end.Status != "exit status 3" {
				t.Errorf("out %q end %+v", out, end)
			}
		}},
		{"start: environment and identity", func(t *testing.T, s *sbx) {
			out, _ := s.run("echo $HOME $USER $E2B_SANDBOX $E2B_SANDBOX_ID; pwd")
			if out != "/home/user user true sbx-scenario\n/home/user\n" {
				t.Errorf("out %q", out)
			}
		}},
		{"start: missing cwd is invalid_argument", func(t *testing.T, s *sbx) {
			cwd := "/nope"
			_, err := s.start(&envdapi.StartRequest{Process: envdapi.ProcessConfig{Cmd: "true", Cwd: &cwd}}, "")
			if connect.CodeOf(err) != connect.CodeInvalidArgument {
				t.Errorf("err %v", err)
			}
		}},
		{"stdin: send input, close stdin", func(t *testing.T, s *sbx) {
			yes := true
			p, err := s.start(&envdapi.StartRequest{Process: envdapi.ProcessConfig{Cmd: "/bin/bash", Args: []string{"-c", "cat"}}, Stdin: &yes}, "")
			if err != nil {
				t.Fatal(err)
			}
			sel := envdapi.ProcessSelector{Pid: &p.pid}
			if _, err := unary[envdapi.SendInputRequest, envdapi.SendInputResponse](s, envdapi.ProcessSendInputProcedure, &envdapi.SendInputRequest{Process: sel, Input: envdapi.ProcessInput{Stdin: []byte("abc")}}); err != nil {
				t.Fatal(err)
			}
			if _, err := unary[envdapi.CloseStdinRequest, envdapi.CloseStdinResponse](s, envdapi.ProcessCloseStdinProcedure, &envdapi.CloseStdinRequest{Process: sel}); err != nil {
				t.Fatal(err)
			}
			out, end, err := p.wait(nil)
			if err != nil || out != "abc" || end.ExitCode != 0 {
				t.Errorf("out %q end %+v err %v", out, end, err)
			}
		}},
		{"list, then SIGTERM and SIGKILL", func(t *testing.T, s *sbx) {
			for _, sig := range []struct {
				sig    envdapi.Signal
				status string
			}{{envdapi.SignalSIGTERM, "signal: terminated"}, {envdapi.SignalSIGKILL, "signal: killed"}} {
				tag := "sleeper"
				req := bash("echo started; sleep 600")
				req.Process.Args = []string{"-c", "echo started; exec sleep 600"}
				req.Tag = &tag
				p, err := s.start(req, "")
				if err != nil {
					t.Fatal(err)
				}
				if _, _, err := p.wait(func(out string) bool { return out == "started\n" }); err != nil {
					t.Fatal(err)
				}
				list, err := unary[envdapi.ListRequest, envdapi.ListResponse](s, envdapi.ProcessListProcedure, &envdapi.ListRequest{})
				if err != nil || len(list.Processes) != 1 || list.Processes[0].Pid != p.pid || *list.Processes[0].Tag != tag {
					t.Fatalf("list %+v err %v", list, err)
				}
				if _, err := unary[envdapi.SendSignalRequest, envdapi.SendSignalResponse](s, envdapi.ProcessSendSignalProcedure, &envdapi.SendSignalRequest{Process: envdapi.ProcessSelector{Tag: &tag}, Signal: sig.sig}); err != nil {
					t.Fatal(err)
				}
				_, end, err := p.wait(nil)
				if err != nil || end.Status != sig.status || end.Exited {
					t.Errorf("end %+v err %v, want %s", end, err, sig.status)
				}
			}
		}},
		{"timeout ends the stream with deadline_exceeded", func(t *testing.T, s *sbx) {
			p, err := s.start(bash("sleep 600"), "300")
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = p.wait(nil)
			if connect.CodeOf(err) != connect.CodeDeadlineExceeded {
				t.Errorf("err %v", err)
			}
		}},
		{"pty: a line runs and resize answers", func(t *testing.T, s *sbx) {
			req := &envdapi.StartRequest{Process: envdapi.ProcessConfig{Cmd: "/bin/bash", Args: []string{"-i", "-l"}, Envs: map[string]string{"TERM": "xterm"}}, Pty: &envdapi.PTY{Size: envdapi.PTYSize{Cols: 80, Rows: 24}}}
			p, err := s.start(req, "")
			if err != nil {
				t.Fatal(err)
			}
			sel := envdapi.ProcessSelector{Pid: &p.pid}
			if _, err := unary[envdapi.UpdateRequest, envdapi.UpdateResponse](s, envdapi.ProcessUpdateProcedure, &envdapi.UpdateRequest{Process: sel, Pty: &envdapi.PTY{Size: envdapi.PTYSize{Cols: 100, Rows: 30}}}); err != nil {
				t.Fatal(err)
			}
			if _, err := unary[envdapi.SendInputRequest, envdapi.SendInputResponse](s, envdapi.ProcessSendInputProcedure, &envdapi.SendInputRequest{Process: sel, Input: envdapi.ProcessInput{Pty: []byte("echo $((6*7)); exit\n")}}); err != nil {
				t.Fatal(err)
			}
			out, end, err := p.wait(nil)
			if err != nil || end == nil || !strings.Contains(out, "42\r\n") {
				t.Errorf("out %q end %+v err %v", out, end, err)
			}
		}},
		{"filesystem: make, stat, list, move, remove", func(t *testing.T, s *sbx) {
			mk, err := unary[envdapi.MakeDirRequest, envdapi.MakeDirResponse](s, envdapi.FilesystemMakeDirProcedure, &envdapi.MakeDirRequest{Path: "d/e"})
			if err != nil || mk.Entry.Path != "/home/user/d/e" || mk.Entry.Owner != "user" || mk.Entry.Type != envdapi.FileTypeDirectory {
				t.Fatalf("mkdir %+v err %v", mk, err)
			}
			if _, err := unary[envdapi.MakeDirRequest, envdapi.MakeDirResponse](s, envdapi.FilesystemMakeDirProcedure, &envdapi.MakeDirRequest{Path: "d/e"}); connect.CodeOf(err) != connect.CodeAlreadyExists {
				t.Errorf("mkdir again: %v", err)
			}
			ls, err := unary[envdapi.ListDirRequest, envdapi.ListDirResponse](s, envdapi.FilesystemListDirProcedure, &envdapi.ListDirRequest{Path: "/home/user/d"})
			if err != nil || len(ls.Entries) != 1 || ls.Entries[0].Name != "e" {
				t.Fatalf("list %+v err %v", ls, err)
			}
			mv, err := unary[envdapi.MoveRequest, envdapi.MoveResponse](s, envdapi.FilesystemMoveProcedure, &envdapi.MoveRequest{Source: "d/e", Destination: "d/f"})
			if err != nil || mv.Entry.Path != "/home/user/d/f" {
				t.Fatalf("move %+v err %v", mv, err)
			}
			if _, err := unary[envdapi.RemoveRequest, envdapi.RemoveResponse](s, envdapi.FilesystemRemoveProcedure, &envdapi.RemoveRequest{Path: "d"}); err != nil {
				t.Fatal(err)
			}
			if _, err := unary[envdapi.StatRequest, envdapi.StatResponse](s, envdapi.FilesystemStatProcedure, &envdapi.StatRequest{Path: "d"}); connect.CodeOf(err) != connect.CodeNotFound {
				t.Errorf("stat removed: %v", err)
			}
		}},
		{"/files: upload with metadata, download, owner", func(t *testing.T, s *sbx) {
			req, _ := http.NewRequest(http.MethodPost, s.srv.URL+"/files?path=up/a.txt&username=user", strings.NewReader("payload"))
			req.Header.Set("Content-Type", "application/octet-stream")
			req.Header.Set(envdapi.AccessTokenHeader, testToken)
			req.Header.Set(envdapi.MetadataHeaderPrefix+"Kind", "note")
			res, err := s.srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusOK || !strings.Contains(string(body), `"kind":"note"`) {
				t.Fatalf("upload %d %s", res.StatusCode, body)
			}
			get, _ := http.NewRequest(http.MethodGet, s.srv.URL+"/files?path=/home/user/up/a.txt", nil)
			get.Header.Set(envdapi.AccessTokenHeader, testToken)
			res, err = s.srv.Client().Do(get)
			if err != nil {
				t.Fatal(err)
			}
			body, _ = io.ReadAll(res.Body)
			res.Body.Close()
			if string(body) != "payload" {
				t.Errorf("download %d %q", res.StatusCode, body)
			}
			out, _ := s.run("stat -c '%U %G' up/a.txt up")
			if out != "user user\nuser user\n" {
				t.Errorf("owners %q", out)
			}
		}},
		{"watch: a file created below the directory is reported", func(t *testing.T, s *sbx) {
			s.run("mkdir -p /home/user/w/sub")
			c := connect.NewClient[envdapi.WatchDirRequest, envdapi.WatchDirResponse](s.srv.Client(), s.srv.URL+envdapi.FilesystemWatchDirProcedure, connect.WithCodec(envdapi.Codec{}))
			r := connect.NewRequest(&envdapi.WatchDirRequest{Path: "/home/user/w", Recursive: true})
			s.request(r)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			st, err := c.CallServerStream(ctx, r)
			if err != nil || !st.Receive() || st.Msg().Start == nil {
				t.Fatalf("watch: %v", err)
			}
			s.run("echo x > /home/user/w/sub/f.txt")
			for st.Receive() {
				if ev := st.Msg().Filesystem; ev != nil && ev.Name == "sub/f.txt" && ev.Type == envdapi.EventTypeCreate {
					return
				}
			}
			t.Errorf("no create event for sub/f.txt: %v", st.Err())
		}},
		{"many short streams in a row all end with their end event", func(t *testing.T, s *sbx) {
			// Through the namespace proxy a stream was once cut when the
			// answer started before the request body had been forwarded.
			for i := range 40 {
				out, end := s.run("echo $((i=" + strconv.Itoa(i) + "))")
				if out != strconv.Itoa(i)+"\n" || end.ExitCode != 0 {
					t.Fatalf("run %d: out %q end %+v", i, out, end)
				}
			}
		}},
		{"auth: no token is 401", func(t *testing.T, s *sbx) {
			res, err := s.srv.Client().Get(s.srv.URL + "/files?path=/etc/hostname")
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusUnauthorized {
				t.Errorf("status %d", res.StatusCode)
			}
		}},
		{"502 after close", func(t *testing.T, s *sbx) {
			s.close()
			_, err := unary[envdapi.ListRequest, envdapi.ListResponse](s, envdapi.ProcessListProcedure, &envdapi.ListRequest{})
			if connect.CodeOf(err) != connect.CodeUnavailable && !strings.Contains(err.Error(), "502") {
				t.Errorf("after close: %v", err)
			}
		}},
	}
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			for _, sc := range scenarios {
				t.Run(sc.name, func(t *testing.T) { sc.run(t, newSbx(t, b)) })
			}
		})
	}
}
