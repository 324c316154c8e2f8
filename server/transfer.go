package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxkit/sandboxkit/internal/toolset"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// base64Pattern is strict standard base64: the alphabet, padding only at
// the end, no whitespace (Go's decoder would skip newlines). It is
// advertised in the schema for clients; the server checks the same
// language (and more: length a multiple of 4, zero pad bits) with
// decodeBase64, once, instead of running the regexp over megabytes.
const base64Pattern = `^[A-Za-z0-9+/]*={0,2}$`

// decodeBase64 decodes strict standard base64 (BIN-1). The strict decoder
// rejects every character outside the alphabet and padding anywhere but at
// the end, except line breaks, which it skips: those are refused here.
func decodeBase64(s string) ([]byte, bool) {
	if len(s)%4 != 0 || strings.ContainsAny(s, "\r\n") {
		return nil, false
	}
	data, err := base64.StdEncoding.Strict().DecodeString(s)
	return data, err == nil
}

// base64Arg is the decoder of data_base64 (BIN-1, VAL-6): a string of at most
// maxEncoded bytes (the schema's maxLength: base64 is ASCII, so bytes are
// characters, and a longer string is refused before it is decoded), strict
// standard base64, at most maxDecoded bytes decoded. It replaces the schema's
// validator, whose pattern regexp costs more than the whole transfer.
func base64Arg(field string, maxEncoded, maxDecoded int) decoder {
	return func(v any) (any, *ToolError) {
		s, ok := v.(string)
		if !ok || len(s) > maxEncoded {
			return nil, invalidField(field)
		}
		data, ok := decodeBase64(s)
		if !ok {
			return nil, &ToolError{Category: sandbox.InvalidArgument, Code: codeBadBase64, Field: field, Recovery: sandbox.InvalidArgument.Recovery()}
		}
		if len(data) > maxDecoded {
			return nil, &ToolError{Category: sandbox.InvalidArgument, Code: codeTooLarge, Field: field, Recovery: sandbox.InvalidArgument.Recovery()}
		}
		return data, nil
	}
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// UploadFile is upload_file (BIN-1): bytes given in strict standard base64,
// written to a file; or, with transfer "url", a signed URL to send them to
// (BIN-3).
func UploadFile(deps *Deps) Tool {
	deps = deps.withDefaults()
	maxEncoded := (deps.Limits.TransferBytes + 2) / 3 * 4
	in := object("",
		req("path", pathArg("The file to write.")),
		// BIN-1, BIN-3: required with transfer "inline", absent with "url";
		// the check below enforces both, naming the field.
		opt("data_base64", &jsonschema.Schema{Type: "string", MaxLength: ptr(maxEncoded), Pattern: base64Pattern,
			Description: "The file's bytes in standard base64 with padding (RFC 4648 section 4), no line breaks; at most " + itoa(deps.Limits.TransferBytes) + " bytes decoded. Required unless transfer is \"url\", and then not allowed."}),
		opt("transfer", transferArg()),
		opt("sandbox_id", sandboxIDExecArg()),
	)
	out := oneForm(object("",
		req("path", &jsonschema.Schema{Type: "string", Description: "The path as given."}),
		opt("size", &jsonschema.Schema{Type: "integer", Description: "Bytes written (inline)."}),
		opt("sha256", &jsonschema.Schema{Type: "string", Description: "SHA-256 of the bytes written, lowercase hex (inline)."}),
		opt("url", urlSchema("With transfer \"url\": where to send the bytes, until expires_at. It carries a signature, no credential.")),
		opt("expires_at", expiresAtSchema()),
		opt("method", enum("With transfer \"url\": the HTTP method to use.", uploadMethod)),
		opt("form_field", enum("With transfer \"url\": the multipart/form-data field that holds the bytes; envd 0.5.7 and later also take the bytes alone as application/octet-stream.", uploadFormField)),
	), []string{"size", "sha256"}, []string{"url", "expires_at", "method", "form_field"})
	def := &mcp.Tool{
		Name: toolset.UploadFile,
		Description: "Write binary data, given in standard base64, to a file in a sandbox, creating parent directories " +
			"and overwriting an existing file. At most " + itoa(deps.Limits.TransferBytes) + " bytes decoded. Returns the " +
			"size and SHA-256 of the bytes written. With transfer \"url\" nothing is written yet: the result's url takes a " +
			"POST of the bytes (multipart/form-data field \"file\", or application/octet-stream) until expires_at, with no " +
			"size cap. sandbox_id is required in a 2026-07-28 request; in a 2025 session, without it the session's default sandbox is used, and one is created when there is none.",
		InputSchema:  in,
		OutputSchema: out,
	}
	return newTool(def, dataPlane{
		check:  uploadCheck,
		fileOp: true,
		run: func(ctx context.Context, sess *session, r *reached, a args) (any, error) {
			path := a.str("path")
			if a.wantsURL() {
				return uploadURL(deps, r, path) // BIN-3
			}
			data := a.bytes("data_base64") // decoded and bounded by validation, before any call (VAL-7)
			if _, err := r.envd.Upload(ctx, path, bytes.NewReader(data)); err != nil {
				return nil, err
			}
			return struct {
				Path   string `json:"path"`
				Size   int    `json:"size"`
				SHA256 string `json:"sha256"`
			}{path, len(data), sha256Hex(data)}, nil
		},
	}.handler(deps)).withDecoder("data_base64", base64Arg("data_base64", maxEncoded, deps.Limits.TransferBytes))
}

// uploadCheck enforces data_base64 by the transfer form, before any call
// (BIN-1, BIN-3, VAL-7): required inline, refused with "url".
func uploadCheck(_ *session, a args) error {
	switch {
	case a.wantsURL() && a.has("data_base64"):
		return exclusiveArg("data_base64")
	case !a.wantsURL() && !a.has("data_base64"):
		return invalidField("data_base64")
	}
	return nil
}

// downloadResult is download_file's result. It goes to the SDK as a value
// (textMirrored): its megabytes of base64 are then encoded as a string, not
// re-scanned as a json.RawMessage on every marshal.
type downloadResult struct {
	Path       string `json:"path"`
	Size       int    `json:"size"`
	SHA256     string `json:"sha256"`
	DataBase64 string `json:"data_base64"`
	Truncated  bool   `json:"truncated"`
}

func (downloadResult) textMirrored() {}

// textForm is the text block of an inline download: the result without
// data_base64, which structuredContent alone carries (TOOLS-3), so that
// the bytes travel once.
func (d downloadResult) textForm() any {
	return struct {
		Path      string `json:"path"`
		Size      int    `json:"size"`
		SHA256    string `json:"sha256"`
		Truncated bool   `json:"truncated"`
	}{d.Path, d.Size, d.SHA256, d.Truncated}
}

// DownloadFile is download_file (BIN-2): a file's bytes in standard base64,
// up to max_bytes; or, with transfer "url", a signed URL to read them from
// (BIN-3).
func DownloadFile(deps *Deps) Tool {
	deps = deps.withDefaults()
	in := object("",
		req("path", pathArg("The file to read.")),
		opt("max_bytes", withDefault(integer("Most bytes to return, 1 to "+itoa(deps.Limits.TransferBytes)+". Default "+
			itoa(deps.Limits.TransferBytes)+".", 1, deps.Limits.TransferBytes), deps.Limits.TransferBytes)),
		opt("transfer", transferArg()),
		opt("sandbox_id", sandboxIDExecArg()),
	)
	out := oneForm(object("",
		req("path", &jsonschema.Schema{Type: "string", Description: "The path as given."}),
		req("size", &jsonschema.Schema{Type: "integer", Description: "Bytes returned (inline), or the file's size (url)."}),
		opt("sha256", &jsonschema.Schema{Type: "string", Description: "SHA-256 of the bytes returned, lowercase hex (inline)."}),
		opt("data_base64", &jsonschema.Schema{Type: "string", Description: "The bytes in standard base64 (inline)."}),
		opt("url", urlSchema("With transfer \"url\": where a plain GET reads the whole file, until expires_at. It carries a signature, no credential.")),
		opt("expires_at", expiresAtSchema()),
		req("truncated", &jsonschema.Schema{Type: "boolean", Description: "True when the file holds more than max_bytes bytes (inline; always false with url)."}),
	), []string{"sha256", "data_base64"}, []string{"url", "expires_at"})
	def := &mcp.Tool{
		Name: toolset.DownloadFile,
		Description: "Read a file's bytes from a sandbox, returned in standard base64 with their size and SHA-256. At most " +
			"max_bytes bytes are returned (default and maximum " + itoa(deps.Limits.TransferBytes) + "); truncated tells " +
			"whether the file holds more. With transfer \"url\" the bytes are not read: the result's url serves the whole " +
			"file to a plain GET until expires_at, with no size cap. A missing path is a not_found error. Without " +
			"sandbox_id the session's default sandbox is used (2025 sessions only; a 2026-07-28 request must pass sandbox_id), and one is created when there is none.",
		InputSchema:  in,
		OutputSchema: out,
	}
	return newTool(def, dataPlane{
		check: func(_ *session, a args) error {
			if a.wantsURL() && a.has("max_bytes") {
				return exclusiveArg("max_bytes") // BIN-3: the URL serves the whole file
			}
			return nil
		},
		fileOp: true,
		run: func(ctx context.Context, sess *session, r *reached, a args) (any, error) {
			path := a.str("path")
			if a.wantsURL() {
				return downloadURL(ctx, deps, r, path) // BIN-3
			}
			maxBytes := a.integer("max_bytes", int64(deps.Limits.TransferBytes))
			// The answer's base64 counts against the in-flight budget
			// until the response is written (responsehold.go).
			shrink, err := reserveResponse(ctx, int64(base64.StdEncoding.EncodedLen(int(maxBytes))))
			if err != nil {
				return nil, err
			}
			data, truncated, err := r.envd.ReadFile(ctx, path, maxBytes)
			if err != nil {
				shrink(0)
				return nil, err
			}
			shrink(int64(base64.StdEncoding.EncodedLen(len(data))))
			return downloadResult{path, len(data), sha256Hex(data), base64.StdEncoding.EncodeToString(data), truncated}, nil
		},
	}.handler(deps))
}
