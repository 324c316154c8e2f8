package sandbox_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandboxkit/sandboxkit/sandbox"
)

// jsSignature is the signature as the E2B JS SDK writes it (e2b@2.51.0
// dist/index.mjs:1427-1438 getSignature, with sha256 at index.mjs:141-146):
// the template `${path}:${operation}:${user}:${envdAccessToken}:${expiration}`,
// SHA-256, btoa (padded standard base64), trailing "=" stripped, "v1_" in
// front.
func jsSignature(path, operation, user, token string, expiration int64) string {
	sum := sha256.Sum256([]byte(path + ":" + operation + ":" + user + ":" + token + ":" + strconv.FormatInt(expiration, 10)))
	return "v1_" + strings.TrimRight(base64.StdEncoding.EncodeToString(sum[:]), "=")
}

func TestTransferURL_SignatureIsTheSDKs(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	exp := time.Unix(1893456000, 0)
	for _, tc := range []struct {
		op   string
		sign func(string, time.Time) (string, error)
	}{{"read", h.envd.DownloadURL}, {"write", h.envd.UploadURL}} {
		raw, err := tc.sign("dir/a b+c.bin", exp)
		if err != nil {
			t.Fatal(err)
		}
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		want := jsSignature("dir/a b+c.bin", tc.op, sandbox.DefaultUser, canaryToken, exp.Unix())
		if q.Get("signature") != want || q.Get("signature_expiration") != "1893456000" || q.Get("path") != "dir/a b+c.bin" ||
			q.Get("username") != sandbox.DefaultUser || u.Path != "/files" {
			t.Errorf("%s: %s, want signature %s", tc.op, raw, want)
		}
		if strings.Contains(raw, canaryToken) {
			t.Errorf("%s: the URL holds the access token: %s", tc.op, raw)
		}
	}
}

// TestTransferURL_PlainHTTP moves bytes through the signed URLs with no
// header at all, in both of envd's upload forms, and checks that the
// daemon refuses every URL used beyond its scope.
func TestTransferURL_PlainHTTP(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			h := newHarness(t, harnessOptions{mode: mode})
			data := allBytes(3)
			exp := time.Now().Add(time.Minute)
			up, err := h.envd.UploadURL("/tmp/t/raw.bin", exp)
			if err != nil {
				t.Fatal(err)
			}
			if code := post(t, h.client, up, "application/octet-stream", bytes.NewReader(data)); code != 200 {
				t.Fatalf("octet-stream upload: %d", code)
			}
			var form bytes.Buffer
			mw := multipart.NewWriter(&form)
			fw, _ := mw.CreateFormFile("file", "raw.bin")
			_, _ = fw.Write(data[:100])
			_ = mw.Close()
			up2, _ := h.envd.UploadURL("/tmp/t/form.bin", exp)
			if code := post(t, h.client, up2, mw.FormDataContentType(), &form); code != 200 {
				t.Fatalf("multipart upload: %d", code)
			}
			down, _ := h.envd.DownloadURL("/tmp/t/raw.bin", exp)
			if code, body := get(t, h.client, down); code != 200 || !bytes.Equal(body, data) {
				t.Fatalf("download: %d, %d bytes", code, len(body))
			}
			down2, _ := h.envd.DownloadURL("/tmp/t/form.bin", exp)
			if code, body := get(t, h.client, down2); code != 200 || !bytes.Equal(body, data[:100]) {
				t.Fatalf("download of the multipart upload: %d, %d bytes", code, len(body))
			}

			past, _ := h.envd.DownloadURL("/tmp/t/raw.bin", time.Now().Add(-2*time.Second))
			other := strings.Replace(down, "raw.bin", "form.bin", 1)
			tampered := strings.Replace(down, "signature=v1_", "signature=v1_A", 1)
			for name, u := range map[string]string{"expired": past, "other path": other, "tampered": tampered} {
				if code, _ := get(t, h.client, u); code != http.StatusUnauthorized {
					t.Errorf("%s URL: %d, want 401", name, code)
				}
			}
			if code := post(t, h.client, down, "application/octet-stream", strings.NewReader("x")); code != http.StatusUnauthorized {
				t.Errorf("a download URL used to upload: %d, want 401", code)
			}
			if code, _ := get(t, h.client, up); code != http.StatusUnauthorized {
				t.Errorf("an upload URL used to download: %d, want 401", code)
			}
		})
	}
}

func TestTransferURL_Refusals(t *testing.T) {
	empty := ""
	h := newHarness(t, harnessOptions{clientToken: &empty})
	if h.envd.Signed() {
		t.Fatal("Signed() true without an access token")
	}
	_, err := h.envd.DownloadURL("/tmp/x", time.Now().Add(time.Minute))
	if e := wantErr(t, err, sandbox.OpFilesDownload, sandbox.InvalidArgument); e.Code != sandbox.CodeUnsigned {
		t.Errorf("code %q, want %q", e.Code, sandbox.CodeUnsigned)
	}
	signed := newHarness(t, harnessOptions{})
	if _, err := signed.envd.UploadURL("/tmp/x", time.Time{}); err == nil {
		t.Error("UploadURL signed a URL that never expires")
	}
	if _, err := signed.envd.DownloadURL("", time.Now().Add(time.Minute)); err == nil {
		t.Error("DownloadURL signed an empty path")
	}
}

func get(t *testing.T, c *http.Client, u string) (int, []byte) {
	t.Helper()
	res, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, body
}

func post(t *testing.T, c *http.Client, u, contentType string, body io.Reader) int {
	t.Helper()
	res, err := c.Post(u, contentType, body)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	return res.StatusCode
}
