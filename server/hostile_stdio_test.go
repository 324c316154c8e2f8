package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sandboxkit/sandboxkit/internal/syncbuf"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

const (
	stdioInit        = initializeBody
	stdioInitialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
)

// runLines serves input (whole, then end of input) on the stdio transport
// with a line bound of maxLine and returns every line written, parsed.
func runLines(t *testing.T, h *harness, input string, maxLine int) []map[string]any {
	t.Helper()
	var out syncbuf.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.srv.Run(ctx, &lineTransport{r: strings.NewReader(input), w: &out, maxLine: maxLine}); err != nil {
		t.Fatalf("Run: %v (the server must survive bad lines)", err)
	}
	var msgs []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("output line is not JSON: %q", sc.Text())
		}
		msgs = append(msgs, m)
	}
	return msgs
}

// byID returns the answer with the given id (a JSON number or string).
func byID(msgs []map[string]any, id any) map[string]any {
	for _, m := range msgs {
		if m["id"] == id {
			return m
		}
	}
	return nil
}

// errorCode returns the JSON-RPC error code of m, or 0.
func errorCode(m map[string]any) float64 {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return c
}

// TestStdioSurvivesBadLines: each malformed line gets a JSON-RPC error (id
// null where it cannot be read) and the session carries on: the calls
// after them, written just before end of input, are answered.
func TestStdioSurvivesBadLines(t *testing.T) {
	h := newHarness(t, nil)
	bad := []struct {
		line string
		code float64
		id   any // the id of the answer
	}{
		{"garbage", -32700, nil},
		{"[]", -32600, nil},
		{`[{"jsonrpc":"2.0","id":7,"method":"ping"}]`, -32600, nil},
		{"null", -32600, nil},
		{`"str"`, -32600, nil},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, -32600, nil},
		{`{"jsonrpc":"2.0","id":[1],"method":"ping"}`, -32600, nil},
		{`{"jsonrpc":"1.0","id":30,"method":"ping"}`, -32600, 30.0},
		{`{"id":31,"method":"ping"}`, -32600, 31.0},
		{`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, -32600, nil},
		{`{"jsonrpc":"2.0","id":1e2,"method":"ping"}`, -32600, nil},
		{`{"jsonrpc":"2.0","id":32,"method":"ping"}{"jsonrpc":"2.0","id":33,"method":"ping"}`, -32700, nil},
		{`{"jsonrpc":"2.0","id":34,"method":"tools/call","params":{"name":"list_sandboxes","name":"kill_sandbox","arguments":{}}}`, -32600, nil},
		{`{"jsonrpc":"2.0","jsonrpc":"2.0","id":35,"method":"ping"}`, -32600, nil},
		{`{"jsonrpc":"2.0","id":36,"method":7}`, -32600, 36.0},
		{`{"jsonrpc":"2.0","id":37,"method":"ping"` + strings.Repeat(" ", 5000) + `}`, -32600, nil}, // over the line bound
	}
	var in strings.Builder
	in.WriteString(stdioInit + "\n" + stdioInitialized + "\n")
	for _, b := range bad {
		in.WriteString(b.line + "\n")
	}
	in.WriteString(`{"jsonrpc":"2.0","id":"after","method":"tools/call","params":{"name":"list_sandboxes","arguments":{}}}` + "\n")
	in.WriteString(`{"jsonrpc":"2.0","id":99,"method":"ping"}`) // no final newline
	msgs := runLines(t, h, in.String(), 4096)

	if m := byID(msgs, 1.0); m == nil || m["result"] == nil {
		t.Errorf("initialize not answered: %v", msgs)
	}
	// Errors under id null, in order; the others by id.
	var nulls []map[string]any
	for _, m := range msgs {
		if id, ok := m["id"]; ok && id == nil {
			nulls = append(nulls, m)
		}
	}
	ni := 0
	for _, b := range bad {
		var m map[string]any
		if b.id == nil {
			if ni < len(nulls) {
				m = nulls[ni]
			}
			ni++
		} else {
			m = byID(msgs, b.id)
		}
		if m == nil || errorCode(m) != b.code {
			t.Errorf("%.60q: answer %v, want error %v", b.line, m, b.code)
		}
	}
	if ni != len(nulls) {
		t.Errorf("%d answers under id null, want %d", len(nulls), ni)
	}
	if m := byID(msgs, "after"); m == nil || m["result"] == nil {
		t.Errorf("the call after the bad lines was not answered: %v", m)
	}
	if m := byID(msgs, 99.0); m == nil || m["result"] == nil {
		t.Errorf("the last line (no newline) was not answered: %v", m)
	}
	if h.fp.Journal().Count(sandbox.OpKillSandbox) != 0 {
		t.Error("the duplicate-name call reached kill_sandbox")
	}
}

// TestStdioAnswersBeforeEOF is the reproduction: initialize,
// initialized and a tools/call written at once, then end of input; every
// request is answered before the server returns.
func TestStdioAnswersBeforeEOF(t *testing.T) {
	h := newHarness(t, nil)
	in := stdioInit + "\n" + stdioInitialized + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"create_sandbox","arguments":{}}}` + "\n"
	msgs := runLines(t, h, in, maxMessageBytes(h.srv.deps.Limits))
	if m := byID(msgs, 1.0); m == nil || m["result"] == nil {
		t.Fatalf("initialize not answered: %v", msgs)
	}
	m := byID(msgs, 2.0)
	if m == nil || m["result"] == nil {
		t.Fatalf("tools/call not answered: %v", msgs)
	}
	if res, _ := m["result"].(map[string]any); res["isError"] == true {
		t.Errorf("create_sandbox failed: %v", res)
	}
	// The sandbox it created was destroyed by the session's cleanup.
	waitFor(t, "created sandbox destroyed", func() bool { return h.fp.LiveCount() == 0 })
}

// TestStdioHugeLine: a line far over the bound is skipped without being
// held, answered with -32600, and the session goes on.
func TestStdioHugeLine(t *testing.T) {
	h := newHarness(t, nil)
	huge := io.MultiReader(
		strings.NewReader(stdioInit+"\n"+stdioInitialized+"\n"+`{"jsonrpc":"2.0","id":5,"method":"ping","params":{"x":"`),
		io.LimitReader(neverEnding('a'), 100<<20),
		strings.NewReader(`"}}`+"\n"+`{"jsonrpc":"2.0","id":6,"method":"ping"}`+"\n"),
	)
	var out syncbuf.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := h.srv.Run(ctx, &lineTransport{r: huge, w: &out, maxLine: 1 << 20}); err != nil {
		t.Fatalf("Run: %v", err)
	}
	got := out.String()
	if !strings.Contains(got, `"code":-32600`) || !strings.Contains(got, "longer than") {
		t.Errorf("no -32600 for the long line: %.300s", got)
	}
	if !strings.Contains(got, `"id":6,"result"`) {
		t.Errorf("the ping after the long line was not answered: %.300s", got)
	}
}

// TestWriteFileInvalidUTF8: raw bytes that are not UTF-8 in write_file's
// content are refused naming the field (FILE-1, VAL-6), not rewritten to
// U+FFFD; nothing is written.
func TestWriteFileInvalidUTF8(t *testing.T) {
	h := newHarness(t, nil)
	in := stdioInit + "\n" + stdioInitialized + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"/tmp/a","content":"ok` + "\xff\xfe" + `"}}}` + "\n"
	msgs := runLines(t, h, in, 1<<20)
	m := byID(msgs, 2.0)
	res, _ := m["result"].(map[string]any)
	if res == nil || res["isError"] != true {
		t.Fatalf("want a tool error, got %v", m)
	}
	// ERR-2: the error object is the text block, with no structuredContent.
	if res["structuredContent"] != nil {
		t.Errorf("a tool error carries structuredContent: %v", res["structuredContent"])
	}
	data, _ := json.Marshal(res["content"])
	if !bytes.Contains(data, []byte(`\"field\":\"content\"`)) {
		t.Errorf("error does not name the field content: %s", data)
	}
	if h.fp.LiveCount() != 0 {
		t.Error("a sandbox was created for a refused call (VAL-7)")
	}
}

// neverEnding is an endless reader of one byte.
type neverEnding byte

func (b neverEnding) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

// TestStdioStopsWhileInputIsOpen: cancelling the server (SIGTERM) ends a
// stdio session promptly even though input never ends and a read is
// blocked.
func TestStdioStopsWhileInputIsOpen(t *testing.T) {
	h := newHarness(t, nil)
	p := startPipeSession(t, h)
	p.write(t, stdioInit+"\n")
	waitFor(t, "initialize answered", func() bool { return strings.Contains(p.out.String(), `"id":1,"result"`) })
	p.stop(t, "with input still open")
}

// pipeSession is a stdio session of a harness's server on a pipe that
// stays open until the test ends: its input never ends by itself.
type pipeSession struct {
	in     *io.PipeWriter
	out    syncbuf.Buffer
	cancel context.CancelFunc
	done   chan error
}

// startPipeSession serves h's server on the stdio transport, reading what
// the test writes, until stop.
func startPipeSession(t *testing.T, h *harness) *pipeSession {
	pr, pw := io.Pipe()
	t.Cleanup(func() { _ = pw.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	p := &pipeSession{in: pw, cancel: cancel, done: make(chan error, 1)}
	go func() { p.done <- h.srv.Run(ctx, &lineTransport{r: pr, w: &p.out, maxLine: 1 << 20}) }()
	return p
}

// write sends lines to the session.
func (p *pipeSession) write(t *testing.T, lines string) {
	t.Helper()
	if _, err := io.WriteString(p.in, lines); err != nil {
		t.Fatal(err)
	}
}

// stop cancels the session, as SIGTERM does, and fails the test unless
// its Run returns within hangGuard.
func (p *pipeSession) stop(t *testing.T, while string) {
	t.Helper()
	p.cancel()
	select {
	case <-p.done:
	case <-time.After(hangGuard):
		t.Fatal("Run did not return after cancellation " + while)
	}
}
