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
	"strings"

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
		{
			ID: "binary.all-byte-values-round-trip", Rules: []string{"BIN-1", "BIN-2"},
			Tools: []string{"upload_file", "download_file"},
			Title: "upload_file writes all 256 byte values and reports their size and sha256; download_file returns the same bytes",
			Body:  specAllByteValuesRoundTrip,
		},
		{
			ID: "binary.large-random-round-trip", Rules: []string{"BIN-1", "BIN-2"},
			Tools: []string{"upload_file", "download_file"},
			Title: "a 2 MiB random payload uploads and downloads byte for byte with matching size and sha256",
			Body:  specLargeRandomRoundTrip,
		},
		{
			ID: "binary.download-max-bytes", Rules: []string{"BIN-2"},
			Tools: []string{"upload_file", "download_file"},
			Title: "download_file with max_bytes below the file's size returns exactly the first max_bytes bytes with truncated true",
			Body:  specDownloadMaxBytes,
		},
		{
			ID: "binary.upload-over-cap", Rules: []string{"BIN-1", "VAL-6"},
			Tools: []string{"upload_file", "download_file"},
			Title: "upload_file of one byte more than its cap decoded (16 MiB by default) is a validation error naming data_base64, and writes nothing",
			Body:  specUploadOverCap,
		},
		{
			ID: "binary.strict-base64", Rules: []string{"BIN-1", "VAL-6"},
			Tools: []string{"upload_file", "download_file"},
			Title: "upload_file rejects base64 that is not strict standard encoding (URL-safe alphabet, missing padding, line breaks, non-zero pad bits) as a validation error",
			Body:  specStrictBase64,
		},
		{
			ID: "binary.download-missing-not-found", Rules: []string{"FILE-4", "BIN-2"},
			Tools: []string{"download_file"},
			Title: "download_file of a path that does not exist is a tool error of category not_found",
			Body:  specDownloadMissingNotFound,
		},
		implicitCreateSpec("binary.implicit-create", "upload_file", []string{"upload_file", "download_file", "get_sandbox"}, specBinaryImplicitCreate),
		renewsOwnedSpec("binary.renews-owned", []string{"upload_file", "download_file"}, specBinaryRenewsOwned),
		externalNoRenewSpec("binary.external-no-renew", []string{"upload_file", "download_file"}, specBinaryExternalNoRenew),
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
