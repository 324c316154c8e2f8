package server

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
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

// upload_file's data_base64 is checked by its decoder, once, in validation:
// a string over the schema's maxLength is refused before it is decoded, a
// bad encoding and a decoded size over the cap are validation errors with
// their static codes, and the handler gets the decoded bytes.
func TestUploadFileDecodesOnce(t *testing.T) {
	tool := UploadFile(&Deps{Limits: Limits{TransferBytes: 6}})
	for _, tc := range []struct {
		data, code string
		ok         bool
	}{
		{"QUJDREVG", "", true},            // 6 bytes: at the cap
		{"QUJDREVGRw==", "", false},       // 12 characters > maxLength 8
		{"QUJDREU=", "", true},            // 5 bytes
		{"QUJD\\/w==", "", true},          // "\/" is "/" in JSON
		{"QUJ=", codeBadBase64, false},    // non-zero pad bits
		{"QU!D", codeBadBase64, false},    // outside the alphabet
		{"QUJD\\nREU=", "", false},        // 9 characters with the line break: over maxLength
		{"QUI=\\n", codeBadBase64, false}, // a line break, within maxLength
	} {
		a, verr := tool.validate(json.RawMessage(`{"path":"/x","data_base64":"` + tc.data + `"}`))
		switch {
		case tc.ok && verr != nil:
			t.Errorf("%s: %v", tc.data, verr)
		case tc.ok:
			var s string
			if err := json.Unmarshal([]byte(`"`+tc.data+`"`), &s); err != nil {
				t.Fatal(err)
			}
			want, _ := base64.StdEncoding.DecodeString(s)
			if !bytes.Equal(a.bytes("data_base64"), want) {
				t.Errorf("%s: decoded %q, want %q", tc.data, a.bytes("data_base64"), want)
			}
		case verr == nil:
			t.Errorf("%s: accepted", tc.data)
		case verr.Field != "data_base64" || verr.Code != tc.code:
			t.Errorf("%s: field %q code %q, want data_base64 %q", tc.data, verr.Field, verr.Code, tc.code)
		}
	}
	// Over the decoded cap within maxLength: 7 bytes need 12 characters,
	// over maxLength 8 too; with a larger maxLength the decoded cap speaks.
	big := base64Arg("data_base64", 100, 6)
	if _, terr := big("QUJDREVGRw=="); terr == nil || terr.Code != codeTooLarge {
		t.Errorf("7 bytes over a 6-byte cap: %v, want code %s", terr, codeTooLarge)
	}
}

// BenchmarkValidateUpload is upload_file's validation of an 8 MiB payload:
// the one decode of the arguments and the one strict base64 decode.
func BenchmarkValidateUpload(b *testing.B) {
	tool := UploadFile(nil)
	raw, _ := json.Marshal(map[string]any{"path": "/x", "data_base64": base64.StdEncoding.EncodeToString(make([]byte, 8<<20))})
	b.SetBytes(int64(len(raw)))
	for range b.N {
		if _, verr := tool.validate(raw); verr != nil {
			b.Fatal(verr)
		}
	}
}
