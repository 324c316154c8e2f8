package conformance

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
)

// The transfer-URL specs (BIN-3) move bytes through the signed envd URL
// that upload_file and download_file return with transfer "url": the kit
// sends and fetches them itself with plain HTTP (loopback against the
// fake). A server whose binary tools do not take transfer offers no
// transfer URLs: the specs are not applicable to it.

// xferNotApplicable is the skip message of a server without transfer URLs.
const xferNotApplicable = "not applicable: the server offers no transfer URLs (upload_file and download_file take no transfer argument)"

// xferUnreachable is the skip message of a transfer URL the kit cannot
// reach.
const xferUnreachable = "not testable: the transfer URL does not reach a sandbox from the kit (no connection; a server whose provider the kit does not share, such as serve --fake)"

// xferMaxTTL is the longest a transfer URL may live (BIN-3), and xferSlack
// what the kit allows for clocks and the call's own duration.
const (
	xferMaxTTL = time.Hour
	xferSlack  = 5 * time.Second
)

// xferOut is the url form of either binary tool's result (BIN-3).
type xferOut struct {
	Path      string `json:"path"`
	Size      int64  `json:"size"`
	URL       string `json:"url"`
	ExpiresAt string `json:"expires_at"`
	Truncated bool   `json:"truncated"`
	Method    string `json:"method"`
	FormField string `json:"form_field"`

	result  *Result
	parsed  *url.URL
	expires time.Time
}

func transferURLSpecs() []Spec {
	return []Spec{
		{
			ID: "binary.url-download-round-trip", Rules: []string{"BIN-3", "BIN-2"},
			Tools: []string{"upload_file", "download_file"},
			Title: "download_file with transfer \"url\" returns a URL whose plain GET gives the file's bytes, with the sha256 and size download_file reports inline",
			Body:  specURLDownloadRoundTrip,
		},
		{
			ID: "binary.url-upload-round-trip", Rules: []string{"BIN-3", "BIN-1"},
			Tools: []string{"upload_file", "download_file"},
			Title: "upload_file with transfer \"url\" returns a URL that takes a plain POST of the bytes, as a multipart form or an octet stream; download_file then returns them",
			Body:  specURLUploadRoundTrip,
		},
		{
			ID: "binary.url-expires", Rules: []string{"BIN-3"},
			Tools: []string{"upload_file", "download_file"},
			Title: "every transfer URL expires: expires_at is in the future and within the hour, the URL's signature_expiration is that instant, and a URL without it or with a later one is refused",
			Body:  specURLExpires,
		},
		{
			ID: "binary.url-scoped", Rules: []string{"BIN-3"},
			Tools: []string{"upload_file", "download_file"},
			Title: "a transfer URL is scoped to its path and operation: a tampered signature, another path, or the other operation is refused",
			Body:  specURLScoped,
		},
		{
			ID: "binary.url-no-secrets", Rules: []string{"BIN-3", "META-4"},
			Tools: []string{"upload_file", "download_file"},
			Title: "a transfer URL carries no API key and no access token, and no other member of the result carries a URL",
			Body:  specURLNoSecrets,
		},
		{
			ID: "binary.url-validation", Rules: []string{"BIN-3", "VAL-6", "FILE-4"},
			Tools: []string{"upload_file", "download_file"},
			Title: "the url form takes no inline argument: data_base64 with transfer \"url\", upload_file inline without data_base64, max_bytes with \"url\" and an unknown transfer are validation errors; a missing file is not_found",
			Body:  specURLValidation,
		},
		{
			ID: "binary.url-unsigned-refused", Rules: []string{"BIN-3"}, NeedsFake: true,
			Tools: []string{"upload_file", "download_file"},
			Title: "transfer \"url\" on a sandbox without an access token (created without secure) is a tool error naming transfer: no unguarded URL",
			Body:  specURLUnsignedRefused,
		},
	}
}

func specURLDownloadRoundTrip(ctx context.Context, tc *TestContext) {
	xferApplicable(tc)
	s := tc.Connect(ctx)
	data := make([]byte, 256<<10+1)
	_, _ = rand.Read(data)
	file := scratchDir("urldown") + "/f.bin"
	binUpload(ctx, tc, s, file, data)
	inline := binDownload(ctx, tc, s, file, 0)
	out := xferCall(ctx, tc, s, "download_file", file)
	gomega.Expect(out.Size).To(gomega.Equal(int64(len(data))), "download_file url form: size is the file's size")
	gomega.Expect(out.Truncated).To(gomega.BeFalse(), "download_file url form: truncated is false")
	gomega.Expect(out.result.Structured).NotTo(gomega.HaveKey("data_base64"), "download_file url form: no inline bytes")
	code, body := xferDo(ctx, tc, http.MethodGet, out.URL, "", nil)
	gomega.Expect(code).To(gomega.Equal(http.StatusOK), "a plain GET of the download URL")
	gomega.Expect(binSHA(body)).To(gomega.Equal(inline.SHA256), "the URL's bytes have the sha256 download_file gives inline")
	gomega.Expect(bytes.Equal(body, data)).To(gomega.BeTrue(), "the URL serves the file's bytes exactly (%d sent, %d back)", len(data), len(body))
}

func specURLUploadRoundTrip(ctx context.Context, tc *TestContext) {
	xferApplicable(tc)
	s := tc.Connect(ctx)
	data := make([]byte, 128<<10+2)
	_, _ = rand.Read(data)
	dir := scratchDir("urlup")
	form := xferCall(ctx, tc, s, "upload_file", dir+"/form.bin")
	gomega.Expect(form.Method).To(gomega.Equal(http.MethodPost), "upload_file url form: method")
	gomega.Expect(form.FormField).To(gomega.Equal("file"), "upload_file url form: form_field")
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, _ := mw.CreateFormFile(form.FormField, "form.bin")
	_, _ = fw.Write(data)
	_ = mw.Close()
	code, _ := xferDo(ctx, tc, form.Method, form.URL, mw.FormDataContentType(), &buf)
	gomega.Expect(code).To(gomega.Equal(http.StatusOK), "a multipart POST to the upload URL")
	gomega.Expect(binDownload(ctx, tc, s, dir+"/form.bin", 0).SHA256).To(gomega.Equal(binSHA(data)), "the multipart upload wrote the bytes")
	raw := xferCall(ctx, tc, s, "upload_file", dir+"/raw.bin")
	code, _ = xferDo(ctx, tc, raw.Method, raw.URL, "application/octet-stream", bytes.NewReader(data[1:]))
	gomega.Expect(code).To(gomega.Equal(http.StatusOK), "an application/octet-stream POST to the upload URL")
	gomega.Expect(binDownload(ctx, tc, s, dir+"/raw.bin", 0).SHA256).To(gomega.Equal(binSHA(data[1:])), "the octet-stream upload wrote the bytes")
}

func specURLExpires(ctx context.Context, tc *TestContext) {
	xferApplicable(tc)
	s := tc.Connect(ctx)
	file := scratchDir("urlexp") + "/f.bin"
	binUpload(ctx, tc, s, file, []byte("expiring"))
	for _, tool := range []string{"download_file", "upload_file"} {
		out := xferCall(ctx, tc, s, tool, file)
		now := time.Now()
		gomega.Expect(out.expires.After(now.Add(-xferSlack))).To(gomega.BeTrue(), "%s: expires_at %s is in the past", tool, out.ExpiresAt)
		gomega.Expect(out.expires.Before(now.Add(xferMaxTTL+xferSlack))).To(gomega.BeTrue(), "%s: expires_at %s is more than an hour away", tool, out.ExpiresAt)
		q := out.parsed.Query()
		gomega.Expect(q.Get("signature_expiration")).To(gomega.Equal(strconv.FormatInt(out.expires.Unix(), 10)),
			"%s: the URL's signature_expiration must be expires_at (a URL signed without it never expires)", tool)
		method := http.MethodGet
		if tool == "upload_file" {
			method = http.MethodPost
		}
		q.Del("signature_expiration")
		xferRefused(ctx, tc, method, out.parsed, q, "without signature_expiration")
		q.Set("signature_expiration", strconv.FormatInt(out.expires.Unix()+3600, 10))
		xferRefused(ctx, tc, method, out.parsed, q, "with signature_expiration an hour later")
	}
}

func specURLScoped(ctx context.Context, tc *TestContext) {
	xferApplicable(tc)
	s := tc.Connect(ctx)
	dir := scratchDir("urlscope")
	binUpload(ctx, tc, s, dir+"/mine.bin", []byte("mine"))
	other := binUpload(ctx, tc, s, dir+"/other.bin", []byte("other"))
	down := xferCall(ctx, tc, s, "download_file", dir+"/mine.bin")
	q := down.parsed.Query()
	sig := q.Get("signature")
	gomega.Expect(sig).NotTo(gomega.BeEmpty(), "the URL carries envd's signature parameter")
	q.Set("signature", xferFlip(sig))
	xferRefused(ctx, tc, http.MethodGet, down.parsed, q, "with a tampered signature")
	q = down.parsed.Query()
	q.Set("path", dir+"/other.bin")
	xferRefused(ctx, tc, http.MethodGet, down.parsed, q, "for another path")
	code, _ := xferDo(ctx, tc, http.MethodPost, down.URL, "application/octet-stream", strings.NewReader("overwritten"))
	gomega.Expect(code).To(gomega.BeNumerically(">=", 400), "a download URL must not take a POST (got %d)", code)
	gomega.Expect(binDownload(ctx, tc, s, dir+"/mine.bin", 0).SHA256).To(gomega.Equal(binSHA([]byte("mine"))), "a POST to a download URL wrote the file")
	up := xferCall(ctx, tc, s, "upload_file", dir+"/other.bin")
	code, _ = xferDo(ctx, tc, http.MethodGet, up.URL, "", nil)
	gomega.Expect(code).To(gomega.BeNumerically(">=", 400), "an upload URL must not serve a GET (got %d)", code)
	gomega.Expect(binDownload(ctx, tc, s, dir+"/other.bin", 0).SHA256).To(gomega.Equal(other.SHA256))
}

func specURLNoSecrets(ctx context.Context, tc *TestContext) {
	xferApplicable(tc)
	s := tc.Connect(ctx)
	file := scratchDir("urlsecret") + "/f.bin"
	binUpload(ctx, tc, s, file, []byte("secret-free"))
	for _, tool := range []string{"download_file", "upload_file"} {
		out := xferCall(ctx, tc, s, tool, file)
		// The host names the sandbox's envd address (its domain is
		// a canary of the fake): META-4 allows it in url alone.
		tc.ExpectNoLeak(tool+"'s transfer URL (path and query)", out.parsed.Path+"?"+out.parsed.RawQuery)
		rest := map[string]any{}
		for k, v := range out.result.Structured {
			if k != "url" {
				rest[k] = v
			}
		}
		data, _ := json.Marshal(rest)
		tc.ExpectNoLeak(tool+"'s result besides url", string(data))
		for _, bad := range []string{"http://", "https://"} {
			gomega.Expect(string(data)).NotTo(gomega.ContainSubstring(bad), "%s: a URL outside the url member (META-4)", tool)
		}
	}
}

func specURLValidation(ctx context.Context, tc *TestContext) {
	xferApplicable(tc)
	s := tc.Connect(ctx)
	file := scratchDir("urlval") + "/f.bin"
	bait := "enEtdmFsLWJhaXQtNTUxMQ=="
	for _, c := range []struct {
		tool, field string
		args        map[string]any
	}{
		{"upload_file", "data_base64", map[string]any{"path": file, "transfer": "url", "data_base64": bait}},
		{"upload_file", "data_base64", map[string]any{"path": file, "transfer": "inline"}},
		{"upload_file", "data_base64", map[string]any{"path": file}},
		{"upload_file", "transfer", map[string]any{"path": file, "transfer": "ftp", "data_base64": bait}},
		{"download_file", "max_bytes", map[string]any{"path": file, "transfer": "url", "max_bytes": 10}},
		{"download_file", "transfer", map[string]any{"path": file, "transfer": "URL"}},
	} {
		tc.ExpectInvalidField(s.Call(ctx, c.tool, c.args), c.field, bait)
	}
	tc.ExpectToolError(s.Call(ctx, "download_file", map[string]any{"path": file}), "not_found")
	tc.ExpectToolError(s.Call(ctx, "download_file", map[string]any{"path": file, "transfer": "url"}), "not_found")
}

func specURLUnsignedRefused(ctx context.Context, tc *TestContext) {
	xferApplicable(tc)
	ext := tc.Seed(fakeprovider.SandboxSeed{})
	s := tc.Connect(ctx)
	file := scratchDir("urlunsigned") + "/f.bin"
	binUpload(ctx, tc, s, file, []byte("open"), ext)
	for _, tool := range []string{"upload_file", "download_file"} {
		r := s.Call(ctx, tool, map[string]any{"path": file, "transfer": "url", "sandbox_id": ext})
		tc.ExpectToolError(r, "invalid_argument")
		gomega.Expect(r.Field()).To(gomega.Equal("transfer"), "%s: the refusal names transfer", tool)
		gomega.Expect(r.JSON).NotTo(gomega.ContainSubstring("/files"), "%s: a URL to an unsecured sandbox", tool)
	}
}

// xferApplicable skips (or, with --require-all, fails) a spec against a
// server whose binary tools take no transfer argument.
func xferApplicable(tc *TestContext) {
	ginkgo.GinkgoHelper()
	if !xferOffered(tc) {
		skipOrFail(tc, xferNotApplicable)
	}
}

// xferOffered reports whether both binary tools advertise a transfer
// argument whose values include "url".
func xferOffered(tc *TestContext) bool {
	for _, tool := range []string{"upload_file", "download_file"} {
		props, _ := advertisedProps(tc, tool)
		prop, _ := props["transfer"].(map[string]any)
		values, _ := prop["enum"].([]any)
		if !slices.Contains(values, any("url")) {
			return false
		}
	}
	return true
}

// xferCall calls tool with transfer "url" for path and checks the url form.
func xferCall(ctx context.Context, tc *TestContext, s *Session, tool, path string) xferOut {
	ginkgo.GinkgoHelper()
	var out xferOut
	r := s.Call(ctx, tool, map[string]any{"path": path, "transfer": "url"})
	tc.decode(r, &out, "path", "url", "expires_at")
	out.result = r
	gomega.Expect(out.Path).To(gomega.Equal(path), "%s: path is the path given", tool)
	var err error
	out.parsed, err = url.Parse(out.URL)
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "%s: url is not a URL", tool)
	gomega.Expect(out.parsed.Scheme).To(gomega.BeElementOf("http", "https"), "%s: url is not an HTTP URL", tool)
	out.expires, err = time.Parse(time.RFC3339, out.ExpiresAt)
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "%s: expires_at %q is not RFC 3339", tool, out.ExpiresAt)
	return out
}

// xferDo sends one plain HTTP request, with no header but the content
// type, and returns the status and (a bounded part of) the body.
// A URL the kit cannot reach at all (no route, no such host: a server on
// a provider the kit does not see, such as serve --fake's embedded fake)
// makes the spec not testable, not failed; with --require-all it fails.
func xferDo(ctx context.Context, tc *TestContext, method, u, contentType string, body io.Reader) (int, []byte) {
	ginkgo.GinkgoHelper()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil && ctx.Err() == nil {
		skipOrFail(tc, xferUnreachable)
	}
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "%s of the transfer URL", method)
	defer res.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	return res.StatusCode, data
}

// xferRefused expects the URL with query q to be refused for method.
func xferRefused(ctx context.Context, tc *TestContext, method string, base *url.URL, q url.Values, what string) {
	ginkgo.GinkgoHelper()
	u := *base
	u.RawQuery = q.Encode()
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader("refused")
	}
	code, _ := xferDo(ctx, tc, method, u.String(), "application/octet-stream", body)
	gomega.Expect(code).To(gomega.BeNumerically(">=", 400), "%s", fmt.Sprintf("the transfer URL %s was accepted (%d)", what, code))
}

// xferFlip changes the last character of a signature.
func xferFlip(sig string) string {
	last := sig[len(sig)-1]
	repl := byte('A')
	if last == 'A' {
		repl = 'B'
	}
	return sig[:len(sig)-1] + string(repl)
}
