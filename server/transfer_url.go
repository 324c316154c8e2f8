package server

import (
	"context"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/sandboxkit/sandboxkit/sandbox"
)

// The transfer argument of upload_file and download_file (BIN-3): the bytes
// inline in the call (base64 in JSON-RPC), or a signed, expiring envd URL
// that the caller moves them through itself.
const (
	transferInline = "inline"
	transferURL    = "url"
)

// Static codes and hints of the url form (BIN-3).
const (
	codeIsDirectory  = "is_directory"
	hintUnsigned     = "This sandbox has no envd access token (it was created without secure), so no signed URL can guard its files; use transfer \"inline\"."
	hintIsDirectory  = "The path is a directory; give the path of a regular file."
	hintURLExclusive = "With transfer \"url\" the bytes travel through the returned URL: leave out data_base64 (upload_file) and max_bytes (download_file)."
)

// uploadMethod and uploadFormField tell the caller how to send the bytes to
// an upload URL (BIN-3): envd's POST /files takes a multipart/form-data
// form with the bytes in the "file" field (every envd version), or the
// bytes alone as application/octet-stream (envd 0.5.7 and later).
const (
	uploadMethod    = "POST"
	uploadFormField = "file"
)

// transferArg is the optional transfer argument (BIN-3).
func transferArg() *jsonschema.Schema {
	return withDefault(enum("How the bytes travel: \"inline\" (default) in this call as base64, or \"url\": the result "+
		"carries a signed envd URL, valid for a few minutes (expires_at), that you send or fetch the bytes through "+
		"with plain HTTP.", transferInline, transferURL), transferInline)
}

// wantsURL reports whether the call asked for the url form (BIN-3).
func (a args) wantsURL() bool { return a.str("transfer") == transferURL }

// exclusiveArg refuses a call that mixes the url form with an argument
// only the inline form takes (BIN-3, VAL-6): it names the field, never the
// value.
func exclusiveArg(field string) *ToolError {
	return &ToolError{Category: sandbox.InvalidArgument, Code: codeInvalidArgument, Field: field, Recovery: hintURLExclusive}
}

// unsignedError refuses the url form for a sandbox without an envd access
// token (BIN-3).
func unsignedError() *ToolError {
	return &ToolError{Category: sandbox.InvalidArgument, Code: sandbox.CodeUnsigned, Field: "transfer", Recovery: hintUnsigned}
}

// signedURL signs path for op (the sandbox package's DownloadURL or
// UploadURL) until now + the configured TTL, at whole seconds. Its callers
// have refused a sandbox without an access token (unsignedError) before
// any daemon call: its URL would be an unguarded capability (BIN-3).
func signedURL(deps *Deps, sign func(string, time.Time) (string, error), path string) (string, string, error) {
	expires := deps.Now().Add(deps.Limits.TransferURLTTL).Truncate(time.Second).UTC()
	u, err := sign(path, expires)
	if err != nil {
		return "", "", err
	}
	return u, expires.Format(time.RFC3339), nil
}

// uploadURLResult is upload_file's result with transfer "url" (BIN-3).
type uploadURLResult struct {
	Path      string `json:"path"`
	URL       string `json:"url"`
	ExpiresAt string `json:"expires_at"`
	Method    string `json:"method"`
	FormField string `json:"form_field"`
}

// uploadURL is upload_file with transfer "url": no byte moves, no daemon
// call is made; the signature scopes the URL to path and writing. r was
// reached for the caller's principal: another principal's sandbox was
// not_found before any URL was signed (HANDLE-5, through reach's
// HANDLE-1 check), since envd itself knows no principal.
func uploadURL(deps *Deps, r *reached, path string) (any, error) {
	if !r.envd.Signed() { // HANDLE-5: r is this principal's (reach)
		return nil, unsignedError()
	}
	u, exp, err := signedURL(deps, r.envd.UploadURL, path)
	if err != nil {
		return nil, err
	}
	return uploadURLResult{path, u, exp, uploadMethod, uploadFormField}, nil
}

// downloadURLResult is download_file's result with transfer "url" (BIN-3).
type downloadURLResult struct {
	Path      string `json:"path"`
	Size      int64  `json:"size"`
	URL       string `json:"url"`
	ExpiresAt string `json:"expires_at"`
	Truncated bool   `json:"truncated"`
}

// downloadURL is download_file with transfer "url": the file is stat'ed
// (a missing path is not_found, FILE-4), not read; the signature scopes
// the URL to path and reading. As for uploadURL, r belongs to the
// caller's principal (HANDLE-5).
func downloadURL(ctx context.Context, deps *Deps, r *reached, path string) (any, error) {
	if !r.envd.Signed() { // HANDLE-5: r is this principal's (reach)
		return nil, unsignedError()
	}
	info, err := r.envd.Stat(ctx, path)
	if err != nil {
		return nil, err
	}
	if info.Type == sandbox.EntryDirectory {
		return nil, &ToolError{Category: sandbox.InvalidArgument, Code: codeIsDirectory, Field: "path", Recovery: hintIsDirectory}
	}
	u, exp, err := signedURL(deps, r.envd.DownloadURL, path)
	if err != nil {
		return nil, err
	}
	return downloadURLResult{path, info.Size, u, exp, false}, nil
}

// expiresAtSchema is expires_at of the url form: RFC 3339 in UTC.
func expiresAtSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Format: "date-time",
		Description: "With transfer \"url\": when the URL stops working, RFC 3339 in UTC."}
}

// urlSchema is url of the url form.
func urlSchema(desc string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Description: desc}
}

// oneForm makes an output schema accept exactly one of the two result
// forms (BIN-3): the inline members, or the url members. oneOf of required
// sets means the same in draft-07 and 2020-12 (TOOLS-5).
func oneForm(s *jsonschema.Schema, inline, url []string) *jsonschema.Schema {
	s.OneOf = []*jsonschema.Schema{{Required: inline}, {Required: url}}
	return s
}
