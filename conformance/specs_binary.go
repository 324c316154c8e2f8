package conformance

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
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

// binCap is the default decoded size cap of upload_file and of
// download_file's max_bytes (BIN-1, BIN-2).
const binCap = 16 << 20

// binUploadOut is upload_file's result (BIN-1).
type binUploadOut struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// binDownloadOut is download_file's result (BIN-2).
type binDownloadOut struct {
	Path       string `json:"path"`
	Size       int64  `json:"size"`
	SHA256     string `json:"sha256"`
	DataBase64 string `json:"data_base64"`
	Truncated  bool   `json:"truncated"`
}

func binarySpecs() []Spec {
	return []Spec{
		{ID: "binary.all-byte-values-round-trip", Rules: []string{"BIN-1", "BIN-2"}, Tools: []string{"upload_file", "download_file"}, Body: specAllByteValuesRoundTrip,
			Title: "upload_file writes all 256 byte values and reports their size and sha256; download_file returns the same bytes"},
		{ID: "binary.large-random-round-trip", Rules: []string{"BIN-1", "BIN-2"}, Tools: []string{"upload_file", "download_file"}, Body: specLargeRandomRoundTrip,
			Title: "a 2 MiB random payload uploads and downloads byte for byte with matching size and sha256"},
		{ID: "binary.download-max-bytes", Rules: []string{"BIN-2"}, Tools: []string{"upload_file", "download_file"}, Body: specDownloadMaxBytes,
			Title: "download_file with max_bytes below the file's size returns exactly the first max_bytes bytes with truncated true"},
		{ID: "binary.upload-over-cap", Rules: []string{"BIN-1", "VAL-6"}, Tools: []string{"upload_file", "download_file"}, Body: specUploadOverCap,
			Title: "upload_file of one byte more than its cap decoded (16 MiB by default) is a validation error naming data_base64, and writes nothing"},
		{ID: "binary.strict-base64", Rules: []string{"BIN-1", "VAL-6"}, Tools: []string{"upload_file", "download_file"}, Body: specStrictBase64,
			Title: "upload_file rejects base64 that is not strict standard encoding (URL-safe alphabet, missing padding, line breaks, non-zero pad bits) as a validation error"},
		{ID: "binary.download-missing-not-found", Rules: []string{"FILE-4", "BIN-2"}, Tools: []string{"download_file"}, Body: specDownloadMissingNotFound,
			Title: "download_file of a path that does not exist is a tool error of category not_found"},
		implicitCreateSpec("binary.implicit-create", "upload_file", []string{"upload_file", "download_file", "get_sandbox"}, specBinaryImplicitCreate),
		renewsOwnedSpec("binary.renews-owned", []string{"upload_file", "download_file"}, specBinaryRenewsOwned),
		externalNoRenewSpec("binary.external-no-renew", []string{"upload_file", "download_file"}, specBinaryExternalNoRenew),
		{ID: "binary.url-download-round-trip", Rules: []string{"BIN-3", "BIN-2"}, Tools: []string{"upload_file", "download_file"}, Body: specURLDownloadRoundTrip,
			Title: "download_file with transfer \"url\" returns a URL whose plain GET gives the file's bytes, with the sha256 and size download_file reports inline"},
		{ID: "binary.url-upload-round-trip", Rules: []string{"BIN-3", "BIN-1"}, Tools: []string{"upload_file", "download_file"}, Body: specURLUploadRoundTrip,
			Title: "upload_file with transfer \"url\" returns a URL that takes a plain POST of the bytes, as a multipart form or an octet stream; download_file then returns them"},
		{ID: "binary.url-expires", Rules: []string{"BIN-3"}, Tools: []string{"upload_file", "download_file"}, Body: specURLExpires,
			Title: "every transfer URL expires: expires_at is in the future and within the hour, the URL's signature_expiration is that instant, and a URL without it or with a later one is refused"},
		{ID: "binary.url-scoped", Rules: []string{"BIN-3"}, Tools: []string{"upload_file", "download_file"}, Body: specURLScoped,
			Title: "a transfer URL is scoped to its path and operation: a tampered signature, another path, or the other operation is refused"},
		{ID: "binary.url-no-secrets", Rules: []string{"BIN-3", "META-4"}, Tools: []string{"upload_file", "download_file"}, Body: specURLNoSecrets,
			Title: "a transfer URL carries no API key and no access token, and no other member of the result carries a URL"},
		{ID: "binary.url-validation", Rules: []string{"BIN-3", "VAL-6", "FILE-4"}, Tools: []string{"upload_file", "download_file"}, Body: specURLValidation,
			Title: "the url form takes no inline argument: data_base64 with transfer \"url\", upload_file inline without data_base64, max_bytes with \"url\" and an unknown transfer are validation errors; a missing file is not_found"},
		{ID: "binary.url-unsigned-refused", Rules: []string{"BIN-3"}, Tools: []string{"upload_file", "download_file"}, NeedsFake: true, Body: specURLUnsignedRefused,
			Title: "transfer \"url\" on a sandbox without an access token (created without secure) is a tool error naming transfer: no unguarded URL"},
	}
}

func specAllByteValuesRoundTrip(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	data := make([]byte, 0, 512)
	for i := 0; i < 256; i++ {
		data = append(data, byte(i))
	}
	for i := 255; i >= 0; i-- { // and every value after every other kind of byte
		data = append(data, byte(i))
	}
	file := scratchDir("allbytes") + "/nested/dir/all.bin"
	binRoundTrip(ctx, tc, s, file, data)
}

func specLargeRandomRoundTrip(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	data := make([]byte, 2<<20+3) // not a multiple of 3: the encoding ends in padding
	_, _ = rand.Read(data)
	file := scratchDir("random") + "/random.bin"
	binRoundTrip(ctx, tc, s, file, data)
	// Uploading again to the same path replaces the file.
	binRoundTrip(ctx, tc, s, file, []byte{0, 1, 2, 0xff})
}

func specDownloadMaxBytes(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	data := make([]byte, 1000)
	_, _ = rand.Read(data)
	file := scratchDir("maxbytes") + "/f.bin"
	binUpload(ctx, tc, s, file, data)
	for _, n := range []int{1, 100, 999} {
		d := binDownload(ctx, tc, s, file, n)
		got := binDecodeStd(d.DataBase64)
		gomega.Expect(got).To(gomega.Equal(data[:n]), "max_bytes %d: exactly the first %d bytes", n, n)
		gomega.Expect(d.Truncated).To(gomega.BeTrue(), "max_bytes %d of a 1000-byte file: truncated", n)
		// The contract does not say whether size and sha256 describe
		// the bytes returned or the whole file; they must agree with
		// one of the two.
		returned := d.Size == int64(n) && d.SHA256 == binSHA(data[:n])
		whole := d.Size == int64(len(data)) && d.SHA256 == binSHA(data)
		gomega.Expect(returned || whole).To(gomega.BeTrue(),
			"max_bytes %d: size %d and sha256 must describe either the bytes returned or the whole file", n, d.Size)
	}
	for _, n := range []int{1000, 1001, 4096} {
		d := binDownload(ctx, tc, s, file, n)
		gomega.Expect(binDecodeStd(d.DataBase64)).To(gomega.Equal(data), "max_bytes %d ≥ the file's size: the whole file", n)
		gomega.Expect(d.Truncated).To(gomega.BeFalse(), "max_bytes %d ≥ the file's size: not truncated", n)
		gomega.Expect(d.Size).To(gomega.Equal(int64(len(data))))
		gomega.Expect(d.SHA256).To(gomega.Equal(binSHA(data)))
	}
}

func specUploadOverCap(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	file := scratchDir("overcap") + "/big.bin"
	// One byte over the cap the kit holds the server to (Config.transferCap:
	// the contract's 16 MiB, or the smaller one the kit gives the
	// in-process server). 16 MiB + 1 byte encodes to as many characters
	// as 16 MiB do (22369624), and so does 4 MiB + 1 as 4 MiB, so a
	// length check on the encoding alone lets it through: only the
	// decoded size is over the cap. The call has a session of its own,
	// since a transport that cannot carry the message may end the
	// session.
	capBytes := tc.Config.transferCap()
	data := bytes.Repeat([]byte{0xa5}, capBytes+1)
	enc := base64.StdEncoding.EncodeToString(data)
	big := tc.Connect(ctx)
	r := big.CallRaw(ctx, "upload_file", uploadArgs(file, enc))
	if r.Err != nil && tc.Kind() == TargetInProcess {
		// The kit's in-memory transport carries at most
		// inProcessMaxMessage per message: check what the server
		// advertises.
		ginkgo.AddReportEntry("upload over the cap", "not sent: the in-process transport limits the size of a message; checked the advertised input schema instead")
		binExpectAdvertisedCap(tc, capBytes)
	} else {
		gomega.Expect(r.Err).NotTo(gomega.HaveOccurred(), "an oversized upload is a tool error, not a protocol error")
		tc.ExpectInvalidField(r, "data_base64")
		gomega.Expect(len(r.JSON)).To(gomega.BeNumerically("<", 4096), "the error must not echo the data")
	}
	tc.ExpectToolError(s.Call(ctx, "download_file", map[string]any{"path": file}), "not_found")
}

// uploadArgs are upload_file's arguments for path and data, written out
// rather than marshalled: standard base64 needs no JSON escaping, and
// marshalling 22 MB of it cost the kit more than the rest of its side of
// the call.
func uploadArgs(path, data string) json.RawMessage {
	p, err := json.Marshal(path)
	if err != nil {
		panic(fmt.Sprintf("conformance: marshal a path: %v", err))
	}
	raw := make([]byte, 0, len(p)+len(data)+32)
	raw = append(raw, `{"path":`...)
	raw = append(raw, p...)
	raw = append(raw, `,"data_base64":"`...)
	raw = append(raw, data...)
	return append(raw, `"}`...)
}

func specStrictBase64(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	dir := scratchDir("b64")
	data := []byte("sandboxkit\xfb\xef\xbe\xff\xff-strict")
	std := base64.StdEncoding.EncodeToString(data)
	url := base64.URLEncoding.EncodeToString(data)
	gomega.Expect(url).NotTo(gomega.Equal(std))
	gomega.Expect(strings.ContainsAny(url, "-_")).To(gomega.BeTrue())
	unpadded := base64.RawStdEncoding.EncodeToString(data)
	gomega.Expect(unpadded).NotTo(gomega.Equal(std))
	bad := map[string]string{
		"URL-safe alphabet":   url,
		"URL-safe unpadded":   base64.RawURLEncoding.EncodeToString(data),
		"missing padding":     unpadded,
		"MIME line break":     std[:16] + "\r\n" + std[16:],
		"newline":             std[:20] + "\n" + std[20:],
		"inner space":         std[:12] + " " + std[12:],
		"padding in the mid":  "c2Fu" + "ZA==" + std,
		"non-zero pad bits":   "c2FuZGJveGtpdB==", // "sandboxkit" ends "dA=="
		"one padding too few": "c2FuZGJveGtpdA=",
	}
	for what, v := range bad {
		r := s.Call(ctx, "upload_file", map[string]any{"path": dir + "/bad.bin", "data_base64": v})
		gomega.Expect(r.IsError).To(gomega.BeTrue(), "%s: %q must be rejected (strict standard base64, BIN-1)", what, v)
		tc.ExpectInvalidField(r, "data_base64", v)
	}
	tc.ExpectToolError(s.Call(ctx, "download_file", map[string]any{"path": dir + "/bad.bin"}), "not_found")
	// The same bytes in strict standard base64 are accepted.
	up := binUpload(ctx, tc, s, dir+"/good.bin", data)
	gomega.Expect(up.Size).To(gomega.Equal(int64(len(data))))
	// The empty string is the strict encoding of zero bytes.
	binRoundTrip(ctx, tc, s, dir+"/empty.bin", []byte{})
}

func specDownloadMissingNotFound(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	tc.ExpectToolError(s.Call(ctx, "download_file", map[string]any{"path": scratchDir("nofile") + "/missing.bin"}), "not_found")
	tc.ExpectToolError(s.Call(ctx, "download_file", map[string]any{"path": scratchDir("nofile") + "/missing.bin", "max_bytes": 10}), "not_found")
}

func specBinaryImplicitCreate(ctx context.Context, tc *TestContext) {
	tc.expectImplicitCreate(ctx, dpImplicitCase{"upload_file", map[string]any{"path": "/tmp/sbk-implicit.bin", "data_base64": "AAEC"}}, dpImplicitCase{"download_file", map[string]any{"path": "/tmp/sbk-implicit.bin"}})
}

func specBinaryRenewsOwned(ctx context.Context, tc *TestContext) {
	file := scratchDir("renew") + "/f.bin"
	tc.expectRenewals(ctx, 75, []dpRenewalCase{
		{Tool: "upload_file", WantEnvd: true, Args: func(id string) map[string]any {
			return map[string]any{"path": file, "data_base64": "/wABAg==", "sandbox_id": id}
		}},
		{Tool: "download_file", WantEnvd: true, Args: func(string) map[string]any {
			return map[string]any{"path": file}
		}},
	})
}

func specBinaryExternalNoRenew(ctx context.Context, tc *TestContext) {
	ext := tc.Seed(fakeprovider.SandboxSeed{})
	s := tc.Connect(ctx)
	mark := tc.Fake.Journal().Len()
	file := scratchDir("ext") + "/f.bin"
	data := []byte{0, 0xff, 0x80, 'x'}
	binUpload(ctx, tc, s, file, data, ext)
	gomega.Expect(binDecodeStd(binDownload(ctx, tc, s, file, 0, ext).DataBase64)).To(gomega.Equal(data))
	tc.expectExternalUntouchedSince("binary tools", ext, mark, true)
	gomega.Expect(tc.liveCreated()).To(gomega.BeEmpty(), "naming an external sandbox creates nothing")
}

func binSHA(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// binDecodeStd decodes download_file's data_base64, which must be standard
// base64 with padding.
func binDecodeStd(s string) []byte {
	ginkgo.GinkgoHelper()
	data, err := base64.StdEncoding.Strict().DecodeString(s)
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "data_base64 is not standard base64")
	return data
}

func binUpload(ctx context.Context, tc *TestContext, s *Session, file string, data []byte, sandboxID ...string) binUploadOut {
	ginkgo.GinkgoHelper()
	args := map[string]any{"path": file, "data_base64": base64.StdEncoding.EncodeToString(data)}
	if len(sandboxID) > 0 {
		args["sandbox_id"] = sandboxID[0]
	}
	var out binUploadOut
	tc.decode(s.Call(ctx, "upload_file", args), &out, "path", "size", "sha256")
	gomega.Expect(out.Path).To(gomega.Equal(file), "upload_file: path is the path given")
	gomega.Expect(out.Size).To(gomega.Equal(int64(len(data))), "upload_file: size is the decoded size")
	gomega.Expect(out.SHA256).To(gomega.Equal(binSHA(data)), "upload_file: sha256 of the bytes written, lowercase hex")
	return out
}

// binDownload downloads file; maxBytes 0 leaves max_bytes out.
func binDownload(ctx context.Context, tc *TestContext, s *Session, file string, maxBytes int, sandboxID ...string) binDownloadOut {
	ginkgo.GinkgoHelper()
	args := map[string]any{"path": file}
	if maxBytes > 0 {
		args["max_bytes"] = maxBytes
	}
	if len(sandboxID) > 0 {
		args["sandbox_id"] = sandboxID[0]
	}
	var out binDownloadOut
	tc.decode(s.Call(ctx, "download_file", args), &out, "path", "size", "sha256", "data_base64", "truncated")
	gomega.Expect(out.Path).To(gomega.Equal(file), "download_file: path is the path given")
	return out
}

// binRoundTrip uploads data and downloads it whole.
func binRoundTrip(ctx context.Context, tc *TestContext, s *Session, file string, data []byte) {
	ginkgo.GinkgoHelper()
	binUpload(ctx, tc, s, file, data)
	d := binDownload(ctx, tc, s, file, 0)
	got := binDecodeStd(d.DataBase64)
	gomega.Expect(bytes.Equal(got, data)).To(gomega.BeTrue(), "download_file must return the uploaded bytes exactly (%d bytes sent, %d back)", len(data), len(got))
	gomega.Expect(d.Size).To(gomega.Equal(int64(len(data))), "download_file: size")
	gomega.Expect(d.SHA256).To(gomega.Equal(binSHA(data)), "download_file: sha256")
	gomega.Expect(d.Truncated).To(gomega.BeFalse(), "download_file of a file under max_bytes: not truncated")
}

// binExpectAdvertisedCap checks that upload_file's advertised input schema
// admits an upload at capBytes, the cap: data_base64 has no maxLength, or one
// of at least the cap's encoded length.
func binExpectAdvertisedCap(tc *TestContext, capBytes int) {
	ginkgo.GinkgoHelper()
	tool := tc.Advertised("upload_file")
	gomega.Expect(tool).NotTo(gomega.BeNil())
	props, _ := schemaMap(tool.InputSchema)["properties"].(map[string]any)
	prop, _ := props["data_base64"].(map[string]any)
	gomega.Expect(prop).NotTo(gomega.BeNil(), "upload_file's input schema has no data_base64")
	if ml, ok := prop["maxLength"].(float64); ok {
		gomega.Expect(int(ml)).To(gomega.BeNumerically(">=", base64.StdEncoding.EncodedLen(capBytes)),
			"upload_file: data_base64's maxLength must admit an upload of the full %d-byte cap", capBytes)
	}
}

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
