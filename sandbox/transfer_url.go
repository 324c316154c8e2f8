package sandbox

import (
	"net/url"
	"strconv"
	"time"

	"github.com/sandboxkit/sandboxkit/internal/envdapi"
)

// CodeUnsigned is the Code of the invalid_argument error [Envd.DownloadURL]
// and [Envd.UploadURL] return for a sandbox that has no envd access token
// (one created without secure): its /files routes need no credential, so
// a URL to them would be an unguarded capability that never expires.
const CodeUnsigned = "unsigned_sandbox"

// Signed reports whether the sandbox has an envd access token, so that
// [Envd.DownloadURL] and [Envd.UploadURL] can sign URLs for it.
func (e *Envd) Signed() bool { return e.token != "" }

// DownloadURL returns a URL from which a plain GET, with no header and no
// credential, reads the file at path as the client's user until expires
// (at whole-second precision): envd's signed /files URL, as the E2B SDKs'
// downloadUrl builds it with useSignatureExpiration. The URL holds neither
// the API key nor the access token, only a signature derived from the
// token; it is scoped to this path (as given: a relative path resolves
// against the user's home), this user and reading. It makes no network
// call and does not check that the file exists.
//
// A sandbox without an access token ([Envd.Signed] false) gets an
// invalid_argument error with code [CodeUnsigned]; so does a zero
// expires: a URL always expires.
//
// Operation: GET /files
func (e *Envd) DownloadURL(path string, expires time.Time) (string, error) {
	return e.signedURL(OpFilesDownload, envdapi.SignRead, path, expires)
}

// UploadURL returns a URL to which a plain POST, with no header and no
// credential, writes the file at path as the client's user until expires:
// envd's signed /files URL, as the E2B SDKs' uploadUrl builds it. The body
// is a multipart/form-data form whose "file" field holds the bytes (every
// envd), or the raw bytes as application/octet-stream (envd 0.5.7 and
// later: e2b@2.51.0 dist/index.mjs:1441 ENVD_OCTET_STREAM_UPLOAD).
// Parent directories are created and an existing file is overwritten. The
// scope, errors and guarantees are those of [Envd.DownloadURL], for
// writing.
//
// Operation: POST /files
func (e *Envd) UploadURL(path string, expires time.Time) (string, error) {
	return e.signedURL(OpFilesUpload, envdapi.SignWrite, path, expires)
}

func (e *Envd) signedURL(op, operation, path string, expires time.Time) (string, error) {
	switch {
	case path == "":
		return "", invalidArgument(op, "path")
	case expires.IsZero():
		return "", invalidArgument(op, "expires")
	case e.token == "":
		return "", &Error{Op: op, Category: InvalidArgument, Code: CodeUnsigned}
	}
	exp := expires.Unix()
	q := url.Values{}
	q.Set("path", path)
	q.Set("username", e.user)
	q.Set("signature", envdapi.FileSignature(path, operation, e.user, e.token, &exp))
	q.Set("signature_expiration", strconv.FormatInt(exp, 10))
	return e.baseURL + envdapi.FilesPath + "?" + q.Encode(), nil
}
