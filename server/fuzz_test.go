package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/internal/syncbuf"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// fuzzFixture is one server, on a fake provider that refuses every request
// with 403 (so a call that passes validation ends at its first platform
// request and creates nothing), and one session on it.
type fuzzFixture struct {
	fp    *fakeprovider.Provider
	srv   *Server
	tools map[string]Tool
	names []string
	cs    *mcp.ClientSession
	ss    *mcp.ServerSession
	logs  *syncbuf.Buffer
}

func newFuzzFixture(tb testing.TB) *fuzzFixture {
	fp := fakeprovider.New(&fakeprovider.Options{NoDaemon: true})
	fp.InjectFault(fakeprovider.Fault{Status: 403})
	p, err := fp.Platform()
	if err != nil {
		tb.Fatal(err)
	}
	logs := &syncbuf.Buffer{}
	srv, err := New(&Deps{Platform: p, Logger: slog.New(slog.NewJSONHandler(logs, nil)),
		Limits: Limits{DestroyRetryFor: -1}, Secrets: []string{fp.APIKey()}}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	fx := &fuzzFixture{fp: fp, srv: srv, tools: map[string]Tool{}, logs: logs}
	for _, t := range srv.Tools() {
		fx.tools[t.Name()] = t
		fx.names = append(fx.names, t.Name())
	}
	serverEnd, clientEnd := net.Pipe()
	ctx := context.Background()
	if fx.ss, err = srv.mcp.Connect(ctx, &mcp.IOTransport{Reader: serverEnd, Writer: serverEnd}, nil); err != nil {
		tb.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "fuzz", Version: "0"}, nil)
	if fx.cs, err = c.Connect(ctx, &mcp.IOTransport{Reader: clientEnd, Writer: clientEnd}, &mcp.ClientSessionOptions{ProtocolVersion: testProtocolVersion}); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = fx.cs.Close()
		_ = fx.ss.Wait()
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		fp.Close()
	})
	return fx
}

// fuzzSeeds are arguments for each tool: valid ones, and ones that break
// each kind of rule.
var fuzzSeeds = []string{
	`{}`, `null`, `[]`, `"S3CRETMARK"`, `7`, `{"S3CRETMARK":1}`, `{"x y":"S3CRETMARK"}`,
	`{"sandbox_id":""}`, `{"sandbox_id":"S3CRETMARK"}`, `{"sandbox_id":"e2b:abc"}`, `{"sandbox_id":"nope:abc"}`, `{"sandbox_id":"abc123"}`,
	`{"timeout":1.5}`, `{"timeout":"60"}`, `{"timeout":true}`, `{"timeout":0}`, `{"timeout":86401}`, `{"timeout":60}`, `{"timeout":1e300}`,
	`{"limit":0}`, `{"limit":100,"offset":5}`, `{"status":"paused"}`, `{"status":"S3CRETMARK"}`, `{"provider":"e2b","region":"eu"}`,
	`{"envs":{"A":"b"}}`, `{"envs":{"A":1}}`, `{"envs":[]}`, `{"cpu":2,"memory":512}`, `{"cpu":-1}`, `{"template":"base"}`,
	`{"command":"echo hi"}`, `{"command":""}`, `{"command":"echo hi","cwd":"/tmp","timeout":5}`, `{"command":"x","cwd":"a\u0000b"}`,
	`{"code":"print(1)","language":"python"}`, `{"code":"x","language":"S3CRETMARK"}`,
	`{"path":"/tmp/x"}`, `{"path":""}`, `{"path":"/tmp/x","content":"S3CRETMARK"}`, `{"path":"/tmp","depth":11}`,
	`{"command_id":"bg-0123456789abcdef"}`, `{"command_id":"bg-0123456789abcdef","cursor":"1.2","max_bytes":10}`,
	`{"command_id":"bg-0123456789abcdef","cursor":"S3CRETMARK"}`, `{"command_id":"bg-0123456789abcdef","signal":"SIGKILL"}`,
	`{"path":"/tmp/x","data_base64":"QUJD"}`, `{"path":"/tmp/x","data_base64":"QUJ\nD"}`, `{"path":"/tmp/x","data_base64":"S3CRETMARK=="}`,
	`{"path":"/tmp/x","max_bytes":0}`, `{"path":"/tmp/x","max_bytes":16777217}`,
	`{"a":1,"a":2}`, `{"timeout":60,"timeout":"x"}`, `{"path":"\ud800"}`,
}

// staticCodes are the codes a validation error may carry.
var staticCodes = map[string]bool{"": true, codeBadBase64: true, codeTooLarge: true, codeNoDefault: true}

// FuzzToolArguments feeds arbitrary arguments to every tool. Validation
// must never panic; a rejection must name one field and carry nothing but
// static text (never the submitted value, VAL-6); a call rejected locally
// must make no platform request and change nothing (VAL-7); and no call
// may end in an internal error.
func FuzzToolArguments(f *testing.F) {
	for i := range len(AllTools(nil)) {
		for _, s := range fuzzSeeds {
			f.Add(uint8(i), []byte(s))
		}
	}
	fx := newFuzzFixture(f)
	f.Fuzz(func(t *testing.T, which uint8, raw []byte) {
		name := fx.names[int(which)%len(fx.names)]
		tool := fx.tools[name]

		// Validation alone, outside every recover.
		_, verr := tool.validate(raw)
		if verr != nil {
			checkValidationError(t, tool, raw, verr)
		}
		if !json.Valid(raw) {
			return // no client can send it
		}

		// The whole call, through the session.
		n := fx.fp.Journal().Len()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := fx.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(raw)})
		grew := fx.fp.Journal().Len() != n
		if err != nil {
			var je *jsonrpc.Error
			if !strings.Contains(err.Error(), "invalid params") && !(errorsAs(err, &je) && je.Code == jsonrpc.CodeInvalidParams) {
				t.Fatalf("protocol error: %v", err)
			}
			checkNoEcho(t, raw, err.Error())
			if grew {
				t.Fatalf("a call refused by the protocol layer reached the platform")
			}
			return
		}
		data, _ := json.Marshal(res)
		checkNoEcho(t, raw, string(data))
		if !res.IsError {
			t.Fatalf("%s succeeded against a provider that refuses everything: %s", name, data)
		}
		var env struct {
			Error ToolError `json:"error"`
		}
		sc := []byte(errorText(t, name, res))
		if err := json.Unmarshal(sc, &env); err != nil {
			t.Fatalf("error result %s: %v", sc, err)
		}
		te := env.Error
		switch {
		case te.Category == sandbox.Internal:
			t.Fatalf("internal error: %s", data)
		case verr != nil:
			// The session answers exactly what validation said.
			want, _ := json.Marshal(errorEnvelope{Error: toToolError(verr)})
			if !bytes.Equal(sc, want) {
				t.Fatalf("result %s, want the validation error %s", sc, want)
			}
			fallthrough
		case te.HTTPStatus == 0:
			// Decided without the platform: nothing reached it.
			if grew {
				t.Fatalf("%s: locally refused (%s) yet the platform saw requests: %v", name, sc, ops(journalFrom(fx.fp, n)))
			}
		default:
			if te.HTTPStatus != 403 || te.Category != sandbox.PermissionDenied {
				t.Fatalf("provider error %s, want the injected 403", sc)
			}
		}
		if te.Category == sandbox.InvalidArgument && te.HTTPStatus == 0 && !staticCodes[te.Code] {
			t.Fatalf("validation error with code %q", te.Code)
		}
		if fx.fp.LiveCount() != 0 {
			t.Fatal("a sandbox was created")
		}
		if s, ok := fx.srv.reg.lookup(fx.ss); ok {
			if id, has := s.defaultSandbox(); has {
				t.Fatalf("the session gained a default %q", id)
			}
		}
		if strings.Contains(fx.logs.String(), "panicked") {
			t.Fatalf("a tool call panicked:\n%s", fx.logs.String())
		}
	})
}

func errorsAs(err error, target **jsonrpc.Error) bool {
	je, ok := err.(*jsonrpc.Error)
	if ok {
		*target = je
	}
	return ok
}

// checkValidationError: the error names one field (a defined property, a
// submitted key that looks like a name, or "arguments") and holds nothing
// else: category invalid_argument and the static hint.
func checkValidationError(t *testing.T, tool Tool, raw []byte, e *ToolError) {
	t.Helper()
	// A decoder (upload_file's data_base64) may say which check failed, in a
	// static code.
	validationCode := e.Code == "" || ((e.Code == codeBadBase64 || e.Code == codeTooLarge) && tool.decoders[e.Field] != nil)
	if e.Category != sandbox.InvalidArgument || e.Recovery != sandbox.InvalidArgument.Recovery() || !validationCode || e.HTTPStatus != 0 {
		t.Fatalf("validation error %+v", e)
	}
	if _, defined := tool.props[e.Field]; defined || e.Field == "arguments" {
		return
	}
	// An undefined key, named only when it looks like one.
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || !safeName.MatchString(e.Field) {
		t.Fatalf("field %q is neither defined nor a submitted name", e.Field)
	}
	if _, submitted := obj[e.Field]; !submitted {
		t.Fatalf("field %q was not submitted", e.Field)
	}
}

// checkNoEcho fails when out holds a string value of raw (not a key) of 8
// bytes or more: a submitted value must never come back (VAL-6). An
// undefined argument's name may come back (VAL-4 names it), so a value
// that is part of a submitted key does not count.
func checkNoEcho(t *testing.T, raw []byte, out string) {
	t.Helper()
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return
	}
	allowed := staticText
	if obj, ok := v.(map[string]any); ok {
		for k := range obj {
			allowed += "\n" + k
		}
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			if len(v) >= 8 && strings.Contains(out, v) && !strings.Contains(allowed, v) {
				t.Fatalf("the value %q is echoed: %s", v, out)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
}

// staticText is every static text a result may hold, so that a value that
// happens to be part of it is not taken for an echo.
var staticText = func() string {
	var b strings.Builder
	for _, c := range sandbox.Categories() {
		b.WriteString(string(c) + " " + c.Recovery() + "\n")
	}
	for _, s := range []string{hintNoDefault, hintSessionClosed, hintUseDownload, hintUnknownCmd, hintTooMany, hintCmdTimeout,
		codeNoDefault, codeSessionClosed, codeInvalidArgument, codeNotUTF8, codeTooLarge, codeUnknownCommand, codeTooMany,
		codeCommandTimeout, codeBadBase64, `"http_status":403`, "permission_denied", "invalid params", "calling \"tools/call\""} {
		b.WriteString(s + "\n")
	}
	for _, t := range AllTools(nil) {
		for p := range t.props {
			b.WriteString(`{"error":{"category":"invalid_argument","field":"` + p + `","recovery":"` + sandbox.InvalidArgument.Recovery() + `"}}` + "\n")
		}
	}
	return b.String()
}()

// referenceBase64 is the strict decoding of BIN-1 as first written: the
// pattern, then Go's strict decoder.
var referenceBase64 = regexp.MustCompile(base64Pattern)

// FuzzDecodeBase64: upload_file's decoder accepts exactly what the
// advertised pattern and a strict standard decoder accept, and returns the
// same bytes.
func FuzzDecodeBase64(f *testing.F) {
	for _, s := range []string{"", "QUJD", "QUI=", "QQ==", "QQ=", "Q===", "QUJ\nD", "QUJD\r\n", "QU JD", "QUJD====", "=QUJ", "QR==", "_-AA", "QUJDRA==QUJD"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := decodeBase64(s)
		var want []byte
		wantOK := len(s)%4 == 0 && referenceBase64.MatchString(s)
		if wantOK {
			var err error
			want, err = base64.StdEncoding.Strict().DecodeString(s)
			wantOK = err == nil
		}
		if ok != wantOK || (ok && !bytes.Equal(got, want)) {
			t.Fatalf("decodeBase64(%q) = %x, %v; want %x, %v", s, got, ok, want, wantOK)
		}
	})
}
