package fakeenvd

import (
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"

	"github.com/sandboxkit/sandboxkit/internal/envdapi"
)

// createFlags open an upload's target: created or truncated.
const createFlags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC

// httpError is a plain-HTTP failure: a status and envd's message.
type httpError struct {
	code int
	err  error
}

func (e *httpError) Error() string { return e.err.Error() }
func (e *httpError) Unwrap() error { return e.err }

func httpErr(code int, format string, args ...any) *httpError {
	return &httpError{code: code, err: fmt.Errorf(format, args...)}
}

// filesUser checks the /files signature and resolves the user and path.
func (d *Daemon) filesUser(r *http.Request, operation string) (account, string, *httpError) {
	q := r.URL.Query()
	raw := q.Get("path")
	if err := d.checkSigning(r, raw, operation); err != nil {
		return account{}, "", &httpError{code: http.StatusUnauthorized, err: err}
	}
	name := q.Get("username")
	a, ok := d.account(name)
	if !ok {
		return account{}, "", httpErr(http.StatusUnauthorized, "error looking up user '%s': user: unknown user %s", name, name)
	}
	p, err := resolvePath(raw, a)
	if err != nil {
		return account{}, "", httpErr(http.StatusBadRequest, "error expanding and resolving path '%s': %w", raw, err)
	}
	return a, p, nil
}

// serveDownload is GET /files: the raw bytes of one regular file.
func (d *Daemon) serveDownload(w http.ResponseWriter, r *http.Request) {
	_, p, herr := d.filesUser(r, envdapi.SignRead)
	if herr != nil {
		writeJSONError(w, herr.code, herr.Error())
		return
	}
	info, err := d.fs.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		writeJSONError(w, http.StatusNotFound, fmt.Sprintf("path '%s' does not exist", p))
		return
	case err != nil:
		writeJSONError(w, http.StatusInternalServerError, fmt.Sprintf("error checking if path exists '%s': %v", p, err))
		return
	case info.IsDir():
		writeJSONError(w, http.StatusBadRequest, fmt.Sprintf("path '%s' is a directory", p))
		return
	case !info.Mode().IsRegular():
		writeJSONError(w, http.StatusBadRequest, fmt.Sprintf("path '%s' is not a regular file", p))
		return
	}
	f, err := d.fs.Open(p)
	if err != nil {
		writeJSONError(w, http.StatusInternalServerError, fmt.Sprintf("error opening file '%s': %v", p, err))
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	http.ServeContent(w, r, path.Base(p), info.ModTime(), f)
}

// serveUpload is POST /files: a multipart form (field "file", several
// allowed) or a raw application/octet-stream body, streamed into the
// filesystem; parents are created and existing files overwritten.
func (d *Daemon) serveUpload(w http.ResponseWriter, r *http.Request) {
	a, p, herr := d.filesUser(r, envdapi.SignWrite)
	if herr != nil {
		writeJSONError(w, herr.code, herr.Error())
		return
	}
	meta := metadataHeaders(r.Header)
	if err := validateMetadata(meta); err != nil {
		writeJSONError(w, http.StatusBadRequest, fmt.Sprintf("invalid metadata: %v", err))
		return
	}
	body := r.Body
	if strings.EqualFold(r.Header.Get("Content-Encoding"), "gzip") {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			writeJSONError(w, http.StatusBadRequest, fmt.Sprintf("error decompressing request body: %v", err))
			return
		}
		defer zr.Close()
		body = zr
		r.Body = zr
	}
	contentType := r.Header.Get("Content-Type")
	mediaType, _, _ := mime.ParseMediaType(contentType)
	var uploaded []envdapi.UploadedEntry
	switch {
	case mediaType == "application/octet-stream":
		if !r.URL.Query().Has("path") {
			herr = httpErr(http.StatusBadRequest, "path query parameter is required for raw body upload")
			break
		}
		if herr = d.writeUpload(r, p, body, a, meta); herr == nil {
			uploaded = append(uploaded, d.uploadedEntry(p))
		}
	case strings.HasPrefix(mediaType, "multipart/"):
		uploaded, herr = d.multipartUpload(r, a, meta)
	default:
		herr = httpErr(http.StatusBadRequest, "unsupported content type: %s, expected multipart/form-data or application/octet-stream", contentType)
	}
	if herr != nil {
		// Read what is left so the client sees the answer rather than a
		// reset connection while it is still sending.
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 1<<30))
		writeJSONError(w, herr.code, herr.Error())
		return
	}
	if uploaded == nil {
		uploaded = []envdapi.UploadedEntry{}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(uploaded)
}

// uploadedEntry describes an uploaded file with its stored metadata, as
// envd reads it back for the answer (infra packages/envd/internal/api/upload.go).
func (d *Daemon) uploadedEntry(p string) envdapi.UploadedEntry {
	e := envdapi.UploadedEntry{Path: p, Name: path.Base(p), Type: "file"}
	if info, err := d.fs.Stat(p); err == nil {
		e.Metadata = metadataOf(info)
	}
	return e
}

// metadataHeaders collects the X-Metadata-* headers, prefix stripped and
// keys lowercased, the first value of each (as envd's extractMetadataHeaders).
func metadataHeaders(h http.Header) map[string]string {
	var meta map[string]string
	for name, values := range h {
		if len(values) == 0 || !strings.HasPrefix(name, envdapi.MetadataHeaderPrefix) {
			continue
		}
		key := strings.ToLower(strings.TrimPrefix(name, envdapi.MetadataHeaderPrefix))
		if key == "" {
			continue
		}
		if meta == nil {
			meta = map[string]string{}
		}
		meta[key] = values[0]
	}
	return meta
}

// Limits of envd's metadata (infra packages/shared/pkg/filesystem/xattr.go):
// keys and values are stored as xattrs named "user.e2b.<key>", which must
// fit in 255 bytes and, all together, in one 4 KiB block.
const (
	metadataXattrPrefix = "user.e2b."
	maxMetadataKeyLen   = 255 - len(metadataXattrPrefix)
	maxMetadataTotalLen = 4096
)

// validateMetadata applies envd's checks: non-empty keys within the length
// limit, printable US-ASCII keys and values, and a total size budget.
func validateMetadata(meta map[string]string) error {
	total := 0
	keys := make([]string, 0, len(meta))
	for k := range meta {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := meta[k]
		if len(k) > maxMetadataKeyLen {
			return fmt.Errorf("metadata key %q exceeds %d bytes", k, maxMetadataKeyLen)
		}
		if err := printableASCII("key", k); err != nil {
			return err
		}
		if err := printableASCII(fmt.Sprintf("value for key %q", k), v); err != nil {
			return err
		}
		total += len(metadataXattrPrefix) + len(k) + len(v)
	}
	if total > maxMetadataTotalLen {
		return fmt.Errorf("total metadata size %d exceeds %d bytes", total, maxMetadataTotalLen)
	}
	return nil
}

func printableASCII(label, s string) error {
	for i := range len(s) {
		if c := s[i]; c < 0x20 || c > 0x7e {
			return fmt.Errorf("metadata %s contains non-printable-ASCII byte 0x%02x at offset %d", label, c, i)
		}
	}
	return nil
}

// multipartUpload stores every "file" part; the target is the path query
// parameter, or else the part's file name (which may carry a path).
func (d *Daemon) multipartUpload(r *http.Request, a account, meta map[string]string) ([]envdapi.UploadedEntry, *httpError) {
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, httpErr(http.StatusInternalServerError, "error parsing multipart form: %w", err)
	}
	q := r.URL.Query()
	var out []envdapi.UploadedEntry
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, httpErr(http.StatusInternalServerError, "error reading form: %w", err)
		}
		if part.FormName() != "file" {
			part.Close()
			continue
		}
		target := q.Get("path")
		if !q.Has("path") {
			_, params, _ := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
			if target = params["filename"]; target == "" {
				part.Close()
				return nil, httpErr(http.StatusBadRequest, "error getting multipart custom part file name: filename is empty")
			}
		}
		p, err := resolvePath(target, a)
		if err != nil {
			part.Close()
			return nil, httpErr(http.StatusBadRequest, "error resolving path: %w", err)
		}
		for _, e := range out {
			if e.Path == p {
				part.Close()
				return nil, httpErr(http.StatusBadRequest, "you cannot upload multiple files to the same path '%s' in one upload request, only the first specified file was uploaded", p)
			}
		}
		herr := d.writeUpload(r, p, part, a, meta)
		part.Close()
		if herr != nil {
			return nil, herr
		}
		out = append(out, d.uploadedEntry(p))
	}
}

// writeUpload streams src into the file at p, owned by a, and replaces its
// metadata with meta (envd rewrites it on every upload, so keys absent from
// a later upload are dropped); a full disk is 507 "not enough disk space
// available".
func (d *Daemon) writeUpload(r *http.Request, p string, src io.Reader, a account, meta map[string]string) *httpError {
	if err := d.fs.MkdirAllAs(path.Dir(p), 0o755, a.uid, a.gid); err != nil {
		return httpErr(http.StatusInternalServerError, "error ensuring directories: %w", err)
	}
	if info, err := d.fs.Stat(p); err == nil && info.IsDir() {
		return httpErr(http.StatusBadRequest, "path is a directory: %s", p)
	}
	f, err := d.fs.CreateAs(p, a.uid, a.gid)
	if err != nil {
		return httpErr(http.StatusInternalServerError, "error opening file: %w", err)
	}
	defer f.Close()
	_ = d.fs.Chown(p, a.uid, a.gid)
	buf := make([]byte, 64<<10)
	if _, err := io.CopyBuffer(f, src, buf); err != nil {
		if isErrno(err, syscall.ENOSPC) {
			if r.ContentLength > 0 {
				return httpErr(http.StatusInsufficientStorage, "attempted to write %d bytes: not enough disk space available", r.ContentLength)
			}
			return httpErr(http.StatusInsufficientStorage, "not enough disk space available")
		}
		return httpErr(http.StatusInternalServerError, "error writing file: %w", err)
	}
	if err := d.fs.SetMetadata(p, meta); err != nil {
		return httpErr(http.StatusInternalServerError, "error writing file metadata: %w", err)
	}
	return nil
}
