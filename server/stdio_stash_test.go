package server

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"
)

// stashLen is how many arguments the server's stash holds.
func stashLen(s *Server) int {
	s.stash.mu.Lock()
	defer s.stash.mu.Unlock()
	return len(s.stash.m)
}

// TestStdioStash: over stdio, a large tools/call's arguments go through the
// stash (the SDK sees a token) and reach the tool whole; arguments the
// handler never takes (an unknown tool, a call refused before it runs) are
// dropped when the call is answered; small ones stay in the message.
func TestStdioStash(t *testing.T) {
	h := newHarness(t, nil)
	data := []byte(strings.Repeat("stash\x00\xff", 4<<10)) // 28 KiB, over stashMinBytes encoded
	sum := sha256.Sum256(data)
	enc := base64.StdEncoding.EncodeToString(data)
	in := stdioInit + "\n" + stdioInitialized + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"upload_file","arguments":{"path":"/tmp/s.bin","data_base64":"` + enc + `"}}}` + "\n" +
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"no_such_tool","arguments":{"x":"` + strings.Repeat("y", 8<<10) + `"}}}` + "\n" +
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"_meta":{"k":1},"name":"upload_file","arguments":{"path":"/tmp/t.bin","data_base64":"` + enc + `","bogus":1}}}` + "\n"
	msgs := runLines(t, h, in, 1<<20)
	up := byID(msgs, 2.0)
	res, _ := up["result"].(map[string]any)
	sc, _ := res["structuredContent"].(map[string]any)
	if res == nil || res["isError"] == true || sc["sha256"] != hex.EncodeToString(sum[:]) || sc["size"] != float64(len(data)) {
		t.Fatalf("upload through the stash: %.400v", up)
	}
	if m := byID(msgs, 3.0); m == nil || (errorCode(m) == 0 && m["result"] == nil) {
		t.Errorf("unknown tool not answered: %v", m)
	}
	// VAL-4 still applies to stashed arguments: the unknown key is named.
	bad := byID(msgs, 5.0)
	res, _ = bad["result"].(map[string]any)
	if res == nil || res["isError"] != true || !strings.Contains(resultText(res), `"field":"bogus"`) {
		t.Errorf("stashed arguments with an unknown key: %.300v", bad)
	}
	if n := stashLen(h.srv); n != 0 {
		t.Errorf("%d arguments left in the stash after every call was answered", n)
	}
}

// resultText is a result's one text block.
func resultText(res map[string]any) string {
	blocks, _ := res["content"].([]any)
	if len(blocks) != 1 {
		return ""
	}
	b, _ := blocks[0].(map[string]any)
	s, _ := b["text"].(string)
	return s
}

// TestStashArguments: the SDK is handed params whose arguments are a token
// for exactly the arguments' bytes, with the other members unchanged; a
// small call, a notification and an ID already in flight keep theirs.
func TestStashArguments(t *testing.T) {
	args := `{"path":"/tmp/a","data_base64":"` + strings.Repeat("QUJD", 2<<10) + `"}`
	line := []byte(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"upload_file", "arguments":` + args + `,"_meta":{"k":1}}}`)
	var st argStash
	c := &lineConn{stash: &st, pending: map[string]string{}}
	f, ferr := checkFrame(line)
	if ferr != nil {
		t.Fatal(ferr)
	}
	req, ok := request(line, f)
	if !ok {
		t.Fatal("request not built")
	}
	tok := c.stashArguments(req, line, f)
	if tok == "" {
		t.Fatal("large arguments not stashed")
	}
	want := `{"name":"upload_file", "arguments":{"` + stashKey + `":"` + tok + `"},"_meta":{"k":1}}`
	if string(req.Params) != want {
		t.Errorf("params handed to the SDK: %s, want %s", req.Params, want)
	}
	if got, ok := st.take(tok, ""); !ok || string(got) != args {
		t.Errorf("stash holds %d bytes (%v), want the %d bytes of the arguments", len(got), ok, len(args))
	}
	for name, l := range map[string]string{
		"small":        `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"x","arguments":{"a":1}}}`,
		"notification": `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x","arguments":` + args + `}}`,
		"in flight":    `{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"x","arguments":` + args + `}}`,
	} {
		f, ferr := checkFrame([]byte(l))
		if ferr != nil {
			t.Fatal(ferr)
		}
		req, _ := request([]byte(l), f)
		if name == "in flight" {
			c.pending[idKey(req.ID)] = ""
		}
		if tok := c.stashArguments(req, []byte(l), f); tok != "" {
			t.Errorf("%s: stashed", name)
		}
	}
	if len(st.m) != 0 {
		t.Errorf("%d entries left in the stash", len(st.m))
	}
}
