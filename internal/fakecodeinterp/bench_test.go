package fakecodeinterp

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkExecute measures one /execute round trip over loopback HTTP for
// a small cell in each in-process language.
func BenchmarkExecute(b *testing.B) {
	for _, c := range []struct{ lang, code string }{
		{"python", "x = sum([i * i for i in range(100)])\nprint(x)\nx"},
		{"javascript", "let s = 0; for (let i = 0; i < 100; i++) s += i * i; console.log(s); s"},
	} {
		b.Run(c.lang, func(b *testing.B) {
			s := New(Config{})
			defer s.Close()
			body, _ := json.Marshal(map[string]any{"code": c.code, "language": c.lang})
			srv := newBenchServer(b, s)
			for b.Loop() {
				resp, err := http.Post(srv+"/execute", "application/json", bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				out, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if !bytes.Contains(out, []byte(`"text":"328350"`)) {
					b.Fatalf("unexpected stream %s", out)
				}
			}
		})
	}
}

func newBenchServer(b *testing.B, s *Server) string {
	b.Helper()
	ts := httptest.NewServer(s)
	b.Cleanup(ts.Close)
	return ts.URL
}
