package server

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestCheckFrame: what the strict check accepts and refuses, and the
// arguments span it finds in a tools/call.
func TestCheckFrame(t *testing.T) {
	for _, tc := range []struct {
		in   string
		code int64 // 0: accepted
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, 0},
		{` {"jsonrpc":"2.0","id":"a","method":"ping"} ` + "\r\n", 0},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, 0},
		{`{"jsonrpc":"2.0","id":-7,"result":{}}`, 0},
		{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}`, jsonrpc.CodeInvalidRequest},
		{`{"jsonrpc":"2.0"}`, jsonrpc.CodeInvalidRequest},
		{`{"jsonrpc":"2.0","id":1,"method":"ping"} {}`, jsonrpc.CodeParseError},
		{`{"jsonrpc":"2.0","id":1,"method":"ping"`, jsonrpc.CodeParseError},
		{``, jsonrpc.CodeParseError},
		{`{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`, jsonrpc.CodeInvalidRequest},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"a":1,"a":2}}}`, jsonrpc.CodeInvalidRequest},
		{`{"jsonrpc":"2.0","id":1.0,"method":"ping"}`, jsonrpc.CodeInvalidRequest},
		{`{"jsonrpc":"2.0","id":1e0,"method":"ping"}`, jsonrpc.CodeInvalidRequest},
		{`{"jsonrpc":"2.0","id":01,"method":"ping"}`, jsonrpc.CodeParseError},
		{`{"jsonrpc":"2.0","id":true,"method":"ping"}`, jsonrpc.CodeInvalidRequest},
		{`{"jsonrpc":"2.0","id":9007199254740992,"method":"ping"}`, 0},
		{`{"jsonrpc":"2.0","id":-9007199254740992,"method":"ping"}`, 0},
		{`{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`, jsonrpc.CodeInvalidRequest},
		{`{"jsonrpc":"2.0","id":99999999999999999999,"method":"ping"}`, jsonrpc.CodeInvalidRequest},
		{`{"jsonrpc":"2.0","id":null,"method":"ping"}`, jsonrpc.CodeInvalidRequest},
		{`{"jsonrpc":2,"id":1,"method":"ping"}`, jsonrpc.CodeInvalidRequest},
		{`{"id":1,"method":"ping"}`, jsonrpc.CodeInvalidRequest},
		{`{"jsonrpc":"2.0","id":1,"method":null}`, jsonrpc.CodeInvalidRequest},
		{`1`, jsonrpc.CodeInvalidRequest},
	} {
		_, err := checkFrame([]byte(tc.in))
		switch {
		case tc.code == 0 && err != nil:
			t.Errorf("%s: refused (%s)", tc.in, err.msg)
		case tc.code != 0 && (err == nil || err.code != tc.code):
			t.Errorf("%s: got %v, want code %d", tc.in, err, tc.code)
		}
	}
	msg := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","arguments": {"k":"v\"}"} ,"_meta":{}}}`
	f, err := checkFrame([]byte(msg))
	if err != nil {
		t.Fatal(err)
	}
	if got := msg[f.argStart:f.argEnd]; got != `{"k":"v\"}"}` {
		t.Errorf("arguments span %q", got)
	}
}

// TestInvalidUTF8Member names the member whose string holds raw bytes
// that are not UTF-8.
func TestInvalidUTF8Member(t *testing.T) {
	for in, want := range map[string]string{
		`{"path":"a","content":"ok"}`:                     "",
		`{"path":"a","content":"ok\ud800"}`:               "", // an escape: decoded as U+FFFD by JSON rules, not raw bytes
		"{\"path\":\"a\",\"content\":\"\xff\"}":           "content",
		"{\"path\":\"\xc3\",\"content\":\"x\"}":           "path",
		"{\"nested\":{\"k\":\"\xfe\"},\"content\":\"x\"}": "nested",
	} {
		if got := invalidUTF8Member([]byte(in)); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

// FuzzCheckFrame: the strict check never panics, and whatever it accepts
// the SDK decodes, with the arguments span (when found) a JSON value.
func FuzzCheckFrame(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"a","arguments":{"b":[1,{"c":"d"}]}}}`,
		`{"jsonrpc":"2.0","id":"x","result":{}}`, `{"jsonrpc":"2.0","id":"q\u0041","method":"a","params":[1]}`,
		`[{"jsonrpc":"2.0"}]`, `{"a":1,"a":2}`, "garbage", `{"jsonrpc":"2.0","id":1.5}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, ferr := checkFrame(data)
		if ferr != nil {
			if ferr.code != jsonrpc.CodeParseError && ferr.code != jsonrpc.CodeInvalidRequest {
				t.Fatalf("code %d", ferr.code)
			}
			if !json.Valid(ferr.response()) {
				t.Fatalf("answer is not JSON: %s", ferr.response())
			}
			return
		}
		if _, err := jsonrpc.DecodeMessage(data); err != nil {
			t.Fatalf("accepted %q, which the SDK cannot decode: %v", data, err)
		}
		sameAsSDK(t, data, fr) // a built request is the SDK's own decoding
		if fr.argEnd > fr.argStart && !json.Valid(data[fr.argStart:fr.argEnd]) {
			t.Fatalf("arguments span %q is not a JSON value", data[fr.argStart:fr.argEnd])
		}
	})
}

// sameAsSDK fails unless request, when it builds a message for data, builds
// the one jsonrpc.DecodeMessage decodes: same ID, method and params.
func sameAsSDK(t *testing.T, data []byte, fr *frame) (built bool) {
	t.Helper()
	req, ok := request(data, fr)
	if !ok {
		return false
	}
	msg, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		t.Fatalf("%q: built a request the SDK refuses: %v", data, err)
	}
	want, isReq := msg.(*jsonrpc.Request)
	if !isReq {
		t.Fatalf("%q: built a request for a %T", data, msg)
	}
	if req.ID != want.ID || req.Method != want.Method || !bytes.Equal(req.Params, want.Params) {
		t.Fatalf("%q: built {%v %q %s}, SDK decodes {%v %q %s}", data, req.ID.Raw(), req.Method, req.Params, want.ID.Raw(), want.Method, want.Params)
	}
	return true
}

// TestRequestMatchesSDK: the request stdio builds from the frame check is
// the SDK's own decoding of the line, and the forms it does not build the
// same way are left to the SDK.
func TestRequestMatchesSDK(t *testing.T) {
	for in, wantBuilt := range map[string]bool{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`:                                                            true,
		`{"jsonrpc":"2.0","id":-42,"method":"ping","params":{}}`:                                              true,
		`{"jsonrpc":"2.0","id":9007199254740992,"method":"ping"}`:                                             true,
		`{"jsonrpc":"2.0","id":"abc-é","method":"ping"}`:                                                      true,
		`{"jsonrpc":"2.0","id":"a\"b","method":"ping"}`:                                                       false,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`:                                              true,
		`{"params": {"name" : "x",  "arguments":{"a":[1, 2]}} ,"jsonrpc":"2.0","id":7,"method":"tools/call"}`: true,
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":null}`:                                              false,
		`{"jsonrpc":"2.0","id":1,"method":"to\u006fls/list"}`:                                                 true,
		`{"jsonrpc":"2.0","id":1,"method":""}`:                                                                false,
		`{"jsonrpc":"2.0","id":1,"result":{}}`:                                                                false,
		`{"jsonrpc":"2.0","id":1,"method":"ping","result":{"x":1},"error":null}`:                              true,
	} {
		fr, ferr := checkFrame([]byte(in))
		if ferr != nil {
			t.Fatalf("%s: refused: %s", in, ferr.msg)
		}
		if built := sameAsSDK(t, []byte(in), fr); built != wantBuilt {
			t.Errorf("%s: built %v, want %v", in, built, wantBuilt)
		}
	}
}
