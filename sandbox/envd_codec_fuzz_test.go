package sandbox

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/sandboxkit/sandboxkit/internal/envdapi"
)

// FuzzEnvdCodec: the envd stream decoder's fast path for output events
// agrees with encoding/json on every input it accepts, never panics, and
// the codec as a whole decodes exactly what encoding/json decodes.
func FuzzEnvdCodec(f *testing.F) {
	for _, s := range []string{
		`{"event":{"data":{"stdout":"aGVsbG8K"}}}`,
		`{"event":{"data":{"stderr":"ZXJyCg=="}}}`,
		`{"event":{"data":{"stdout":""}}}`,
		`{"event":{"data":{"stdout":"QR=="}}}`,
		`{"event":{"data":{"stdout":"QUJD\nREVG"}}}`,
		`{"event":{"data":{"stdout":"QUJD\u0041"}}}`,
		`{"event":{"data":{"stdout":"QUJD","stderr":"QUJD"}}}`,
		`{"event":{"data":{"STDOUT":"QUJD"}}}`,
		`{"event":{"data":{"pty":"QUJD"}}}`,
		`{"event":{"start":{"pid":42}}}`,
		`{"event":{"end":{"exitCode":3,"exited":true,"status":"exit status 3"}}}`,
		`{"event":{"keepalive":{}}}`,
		`{"event":{"data":{"stdout":"aGVsbG8K"}}} `,
		`{"event":{"data":{"stdout":"aGVsbG8K"}}}}`,
		`{"event":{"data":{"stdout":"a"}}}`,
		`{"event":{"data":{"stdout":"////"}}}`,
		`{"event":null}`, `null`, `[]`, ``, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// The fast path against encoding/json, on fresh values.
		if d, ok := decodeDataEvent(data); ok {
			var want envdapi.StartResponse
			if err := json.Unmarshal(data, &want); err != nil {
				t.Fatalf("fast path accepted %q, which encoding/json rejects: %v", data, err)
			}
			w := want.Event
			if w.Data == nil || w.Start != nil || w.End != nil || w.Keepalive != nil ||
				!bytes.Equal(d.Stdout, w.Data.Stdout) || !bytes.Equal(d.Stderr, w.Data.Stderr) || len(w.Data.Pty) != 0 ||
				(len(d.Stdout) > 0 && len(d.Stderr) > 0) {
				t.Fatalf("fast path decoded %q as %+v, encoding/json as %+v", data, d, w.Data)
			}
		}
		// The codec as connect-go calls it, for both stream kinds.
		var c envdCodec
		var gotStart, wantStart envdapi.StartResponse
		errGot, errWant := c.Unmarshal(data, &gotStart), json.Unmarshal(data, &wantStart)
		if (errGot == nil) != (errWant == nil) {
			t.Fatalf("codec error %v, encoding/json error %v for %q", errGot, errWant, data)
		}
		if errGot == nil {
			g, _ := json.Marshal(gotStart)
			w, _ := json.Marshal(wantStart)
			if !bytes.Equal(g, w) {
				t.Fatalf("codec decoded %q as %s, encoding/json as %s", data, g, w)
			}
		}
		var gotConn envdapi.ConnectResponse
		if err := c.Unmarshal(data, &gotConn); (err == nil) != (errWant == nil) {
			t.Fatalf("connect codec error %v, encoding/json error %v", err, errWant)
		}
	})
}
