package server

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sandboxkit/sandboxkit/sandbox"
)

func TestHeadTail(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limit  int
		chunks []string
	}{
		{"empty", 100, nil},
		{"fits", 100, []string{"hello ", "world"}},
		{"exactly the limit", 100, []string{strings.Repeat("a", 100)}},
		{"one over", 100, []string{strings.Repeat("a", 101)}},
		{"many small writes", 100, strings.Split(strings.Repeat("0123456789", 100), "")},
		{"one huge write", 128, []string{strings.Repeat("x", 10000) + "END"}},
		{"multibyte", 100, []string{strings.Repeat("é✓", 200)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newHeadTail(tc.limit)
			full := strings.Join(tc.chunks, "")
			for _, c := range tc.chunks {
				if n, err := w.Write([]byte(c)); n != len(c) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			got := w.String()
			if len(full) <= tc.limit {
				if got != full || w.truncated() {
					t.Errorf("got %q (truncated %v), want all of it", got, w.truncated())
				}
				return
			}
			if !w.truncated() {
				t.Error("truncated() = false")
			}
			if len(got) > tc.limit {
				t.Errorf("len %d > limit %d", len(got), tc.limit)
			}
			head, tail, ok := strings.Cut(got, "\n[... ")
			if !ok {
				t.Fatalf("no marker in %q", got)
			}
			_, tail, _ = strings.Cut(tail, " bytes truncated ...]\n")
			if !strings.HasPrefix(full, head) || !strings.HasSuffix(full, tail) {
				t.Errorf("head %q or tail %q is not from the stream", head, tail)
			}
			if len(head) < tc.limit/2-utf8.UTFMax || len(tail) == 0 {
				t.Errorf("head %d bytes, tail %d bytes", len(head), len(tail))
			}
			if !utf8.ValidString(got) && utf8.ValidString(full) {
				t.Errorf("cut inside a character: %q", got)
			}
		})
	}
}

func TestCursor(t *testing.T) {
	c := sandbox.Cursor{Stdout: 12, Stderr: 3400}
	if got, ok := parseCursor(formatCursor(c)); !ok || got != c {
		t.Errorf("round trip: %v %v", got, ok)
	}
	for _, bad := range []string{"", "1", "1.", ".1", "-1.0", "1.2.3", "a.b", "1234567890123456789.0"} {
		if _, ok := parseCursor(bad); ok {
			t.Errorf("parseCursor(%q) accepted", bad)
		}
	}
}

func TestDecodeBase64(t *testing.T) {
	for s, ok := range map[string]bool{
		"": true, "QQ==": true, "QUI=": true, "QUJD": true,
		"QQ": false, "QQ=": false, "Q===": false, "QUJD\n": false, "QU JD": false, "-_8=": false, "QR==": false,
	} {
		if _, got := decodeBase64(s); got != ok {
			t.Errorf("decodeBase64(%q) ok = %v, want %v", s, got, ok)
		}
	}
}
