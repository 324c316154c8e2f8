package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// urlCall calls a tool with transfer "url" and returns its structured
// content. It is c.ok without the URL check of callErr: the url member is
// the one URL a result may carry (META-4, BIN-3); everything else of the
// result is still checked for leaks.
func (c *client) urlCall(name string, args map[string]any) map[string]any {
	c.h.t.Helper()
	args["transfer"] = "url"
	res, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		c.h.t.Fatalf("%s: %v", name, err)
	}
	m := c.success(name, args, res)
	checkTextMatchesStructured(c.h.t, name, res)
	u, _ := m["url"].(string)
	others := map[string]any{}
	for k, v := range m {
		if k != "url" {
			others[k] = v
		}
	}
	restJSON, _ := json.Marshal(others)
	rest := string(restJSON)
	parsed, perr := url.Parse(u)
	if perr != nil || parsed.RawQuery == "" {
		c.h.t.Fatalf("%s: url %q", name, u)
	}
	// The host carries the sandbox's domain (a canary of the fake); the
	// query must carry no secret at all, and the other members (the text
	// block equals them, checked above) no URL.
	for what, text := range map[string]string{"the url's query": parsed.RawQuery, "the result besides url": rest} {
		if canary, ok := c.h.fp.FindCanary(text); ok {
			c.h.t.Errorf("%s: %s leaks %q", name, what, canary)
		}
	}
	if strings.Contains(rest, "https://") || strings.Contains(rest, "sandboxkit.test") {
		c.h.t.Errorf("%s: a URL outside the url member: %s", name, rest)
	}
	return m
}

func httpDo(t *testing.T, hc *http.Client, method, u, contentType string, body io.Reader) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return res.StatusCode, data
}

func TestTransferURL_Download(t *testing.T) {
	h := newHarness(t, nil)
	c := h.connect()
	data := make([]byte, 100<<10+1)
	_, _ = rand.Read(data)
	c.ok("upload_file", map[string]any{"path": "/tmp/u/blob", "data_base64": base64.StdEncoding.EncodeToString(data)})
	before := time.Now()
	out := c.urlCall("download_file", map[string]any{"path": "/tmp/u/blob"})
	if out["size"] != float64(len(data)) || out["truncated"] != false || out["data_base64"] != nil || out["sha256"] != nil {
		t.Errorf("url form %v", out)
	}
	exp, err := time.Parse(time.RFC3339, out["expires_at"].(string))
	if err != nil || exp.Before(before.Add(DefaultTransferURLTTL-2*time.Second)) || exp.After(time.Now().Add(DefaultTransferURLTTL)) {
		t.Errorf("expires_at %v, want about now + %s", out["expires_at"], DefaultTransferURLTTL)
	}
	u, _ := url.Parse(out["url"].(string))
	if u.Query().Get("signature_expiration") != strconv.FormatInt(exp.Unix(), 10) {
		t.Errorf("signature_expiration %q, want expires_at %d", u.Query().Get("signature_expiration"), exp.Unix())
	}
	code, got := httpDo(t, h.fp.HTTPClient(), http.MethodGet, out["url"].(string), "", nil)
	if code != 200 || !bytes.Equal(got, data) {
		t.Fatalf("GET url: %d, %d bytes", code, len(got))
	}
	if code, _ := httpDo(t, h.fp.HTTPClient(), http.MethodPost, out["url"].(string), "application/octet-stream", strings.NewReader("x")); code != http.StatusUnauthorized {
		t.Errorf("a download URL took a POST: %d", code)
	}
}

func TestTransferURL_Upload(t *testing.T) {
	h := newHarness(t, nil)
	c := h.connect()
	data := make([]byte, 64<<10)
	_, _ = rand.Read(data)
	sum := sha256.Sum256(data)
	out := c.urlCall("upload_file", map[string]any{"path": "/tmp/u/raw"})
	if out["method"] != "POST" || out["form_field"] != "file" || out["size"] != nil {
		t.Errorf("url form %v", out)
	}
	if code, _ := httpDo(t, h.fp.HTTPClient(), http.MethodPost, out["url"].(string), "application/octet-stream", bytes.NewReader(data)); code != 200 {
		t.Fatalf("POST octet-stream: %d", code)
	}
	if got := c.ok("download_file", map[string]any{"path": "/tmp/u/raw"}); got["sha256"] != hex.EncodeToString(sum[:]) {
		t.Errorf("octet-stream upload wrote %v", got["size"])
	}
	out = c.urlCall("upload_file", map[string]any{"path": "/tmp/u/form"})
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	fw, _ := mw.CreateFormFile("file", "form")
	_, _ = fw.Write(data)
	_ = mw.Close()
	if code, _ := httpDo(t, h.fp.HTTPClient(), http.MethodPost, out["url"].(string), mw.FormDataContentType(), &form); code != 200 {
		t.Fatalf("POST multipart: %d", code)
	}
	if got := c.ok("download_file", map[string]any{"path": "/tmp/u/form"}); got["sha256"] != hex.EncodeToString(sum[:]) {
		t.Errorf("multipart upload wrote %v", got["size"])
	}
	if code, _ := httpDo(t, h.fp.HTTPClient(), http.MethodGet, out["url"].(string), "", nil); code != http.StatusUnauthorized {
		t.Errorf("an upload URL served a GET: %d", code)
	}
}

// VAL-6, VAL-7, BIN-3: the forms' arguments are exclusive, checked before
// any call, naming the field and never echoing it.
func TestTransferURL_Validation(t *testing.T) {
	h := newHarness(t, nil)
	c := h.connect()
	bait := base64.StdEncoding.EncodeToString([]byte("zq-bait-7781"))
	for _, tc := range []struct {
		tool  string
		args  map[string]any
		field string
	}{
		{"upload_file", map[string]any{"path": "/tmp/v", "transfer": "url", "data_base64": bait}, "data_base64"},
		{"upload_file", map[string]any{"path": "/tmp/v"}, "data_base64"},
		{"upload_file", map[string]any{"path": "/tmp/v", "transfer": "inline"}, "data_base64"},
		{"upload_file", map[string]any{"path": "/tmp/v", "transfer": "ftp", "data_base64": bait}, "transfer"},
		{"download_file", map[string]any{"path": "/tmp/v", "transfer": "url", "max_bytes": 10}, "max_bytes"},
		{"download_file", map[string]any{"path": "/tmp/v", "transfer": "URL"}, "transfer"},
	} {
		mark := len(h.fp.Journal().Ops())
		te := c.fail(tc.tool, tc.args)
		if te.Category != sandbox.InvalidArgument || te.Field != tc.field {
			t.Errorf("%s %v: %+v, want invalid_argument naming %s", tc.tool, tc.args, te, tc.field)
		}
		if ops := h.fp.Journal().Ops()[mark:]; len(ops) != 0 {
			t.Errorf("%s %v: a rejected call reached the provider: %v", tc.tool, tc.args, ops)
		}
	}
	if te := c.fail("download_file", map[string]any{"path": "/tmp/nothing-here", "transfer": "url"}); te.Category != sandbox.NotFound {
		t.Errorf("missing file: %+v", te)
	}
	if te := c.fail("download_file", map[string]any{"path": "/tmp", "transfer": "url"}); te.Category != sandbox.InvalidArgument || te.Field != "path" {
		t.Errorf("directory: %+v", te)
	}
}

// A sandbox without an access token cannot be guarded by a signature.
func TestTransferURL_UnsignedSandboxRefused(t *testing.T) {
	h := newHarness(t, nil)
	c := h.connect()
	ext := h.fp.AddSandbox(fakeprovider.SandboxSeed{})
	c.ok("upload_file", map[string]any{"path": "/tmp/x", "data_base64": "AAEC", "sandbox_id": ext})
	for _, tool := range []string{"upload_file", "download_file"} {
		te := c.fail(tool, map[string]any{"path": "/tmp/x", "transfer": "url", "sandbox_id": ext})
		if te.Category != sandbox.InvalidArgument || te.Field != "transfer" || te.Code != sandbox.CodeUnsigned || te.Recovery != hintUnsigned {
			t.Errorf("%s: %+v", tool, te)
		}
	}
}

// The TTL is the server's: a URL is refused once it has passed.
func TestTransferURL_Expires(t *testing.T) {
	h := newHarness(t, &harnessOptions{limits: Limits{TransferURLTTL: time.Second}})
	c := h.connect()
	c.ok("upload_file", map[string]any{"path": "/tmp/e", "data_base64": "AAEC"})
	out := c.urlCall("download_file", map[string]any{"path": "/tmp/e"})
	exp, _ := time.Parse(time.RFC3339, out["expires_at"].(string))
	if d := time.Until(exp); d > time.Second {
		t.Errorf("expires in %s with a 1 s TTL", d)
	}
	time.Sleep(time.Until(exp.Add(1100 * time.Millisecond)))
	if code, _ := httpDo(t, h.fp.HTTPClient(), http.MethodGet, out["url"].(string), "", nil); code != http.StatusUnauthorized {
		t.Errorf("an expired URL: %d, want 401", code)
	}
}

func TestTransferURLTTLBounds(t *testing.T) {
	for in, want := range map[time.Duration]time.Duration{0: DefaultTransferURLTTL, time.Millisecond: MinTransferURLTTL, 2 * time.Hour: MaxTransferURLTTL, time.Minute: time.Minute} {
		if got := (Limits{TransferURLTTL: in}).withDefaults().TransferURLTTL; got != want {
			t.Errorf("TransferURLTTL %s: %s, want %s", in, got, want)
		}
	}
}
