package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"mime/multipart"
	"net/http"
	"net/url"
	pathpkg "path"
	"strings"
	"sync"

	"github.com/sandboxkit/sandboxkit/internal/envdapi"
)

// maxUploadResponse bounds the JSON answer of an upload.
const maxUploadResponse = 1 << 20

// copyBufferSize is the buffer of DownloadTo's copy loop.
const copyBufferSize = 64 << 10

// maxPrealloc bounds the buffer ReadFile allocates up front from a
// Content-Length; beyond it the buffer grows as bytes arrive.
const maxPrealloc = 64 << 20

// WriteInfo describes a file written by an upload.
type WriteInfo struct {
	// Path is the absolute path the daemon wrote.
	Path string
	// Name is the file's base name.
	Name string
	// Size is the number of bytes sent.
	Size int64
}

// filesURL builds the /files address for path and the client's user.
func (e *Envd) filesURL(path string) string {
	q := url.Values{}
	q.Set("path", path)
	q.Set("username", e.user)
	return e.baseURL + envdapi.FilesPath + "?" + q.Encode()
}

// filesError reads (a bounded part of) an error response, keeps none of it
// and maps its status: 404 not_found, 400 invalid_argument, 401
// unauthenticated, 502 unavailable (the sandbox is not running), 507
// provider_error with code insufficient_storage.
func filesError(op string, resp *http.Response) *Error {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
	_ = resp.Body.Close()
	code := ""
	if resp.StatusCode == http.StatusInsufficientStorage {
		code = "insufficient_storage"
	}
	return statusError(op, resp.StatusCode, code)
}

// Download opens a file of the sandbox for reading; the bytes stream from
// the daemon as the caller reads, and the caller must Close the reader.
// Read errors are *Error values too (io.EOF marks the end). A missing path
// is a not_found error, a directory an invalid_argument one. A relative
// path resolves against the user's home.
//
// Operation: GET /files
func (e *Envd) Download(ctx context.Context, path string) (io.ReadCloser, error) {
	body, err := e.download(ctx, path)
	if err != nil {
		return nil, err
	}
	return body, nil
}

// download is Download returning the concrete body.
func (e *Envd) download(ctx context.Context, path string) (*downloadBody, error) {
	const op = OpFilesDownload
	if path == "" {
		return nil, invalidArgument(op, "path")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.filesURL(path), nil)
	if err != nil {
		return nil, &Error{Op: op, Category: Internal}
	}
	e.setHeaders(req.Header, false)
	resp, err := e.httpClient.Do(req)
	if err != nil {
		return nil, transportError(op, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, filesError(op, resp)
	}
	return &downloadBody{op: op, body: resp.Body, size: resp.ContentLength}, nil
}

// downloadBody turns read errors into *Error values: a transport error's
// text may name the host.
type downloadBody struct {
	op   string
	body io.ReadCloser
	size int64 // Content-Length, or -1
	err  error // the first non-EOF read error, as returned
}

// Read reads the body, turning a failure into an *Error.
func (d *downloadBody) Read(p []byte) (int, error) {
	n, err := d.body.Read(p)
	if err != nil && err != io.EOF {
		if d.err == nil {
			d.err = transportError(d.op, err)
		}
		err = d.err
	}
	return n, err
}

// Close closes the body.
func (d *downloadBody) Close() error {
	_ = d.body.Close()
	return nil
}

// DownloadTo copies a file of the sandbox into w as it arrives and returns
// the number of bytes copied. A failure of w is an internal error naming
// the field "w".
//
// Operation: GET /files
func (e *Envd) DownloadTo(ctx context.Context, path string, w io.Writer) (int64, error) {
	const op = OpFilesDownload
	if w == nil {
		return 0, invalidArgument(op, "w")
	}
	body, err := e.download(ctx, path)
	if err != nil {
		return 0, err
	}
	defer body.Close()
	buf := make([]byte, copyBufferSize)
	n, err := io.CopyBuffer(writerOnly{w}, body, buf)
	if err != nil {
		if body.err != nil {
			return n, body.err
		}
		return n, &Error{Op: op, Category: Internal, Field: "w"}
	}
	return n, nil
}

// writerOnly hides any ReadFrom method, so that io.CopyBuffer uses its
// buffer and read errors stay distinguishable from write errors.
type writerOnly struct{ io.Writer }

// ReadFile reads at most limit bytes of a file; truncated is true when the
// file holds more. limit must be positive.
//
// Operation: GET /files
func (e *Envd) ReadFile(ctx context.Context, path string, limit int64) (data []byte, truncated bool, err error) {
	const op = OpFilesDownload
	if limit <= 0 {
		return nil, false, invalidArgument(op, "limit")
	}
	body, err := e.download(ctx, path)
	if err != nil {
		return nil, false, err
	}
	defer body.Close()
	want := limit // one byte more than the limit tells truncation
	if want < math.MaxInt64 {
		want++
	}
	// Size the buffer from Content-Length when the daemon sent one, within reason.
	size := int64(512)
	if body.size >= 0 {
		size = min(body.size+1, maxPrealloc)
	}
	buf := make([]byte, 0, min(want, size))
	buf, err = readUpTo(body, buf, want)
	if err != nil {
		return nil, false, err
	}
	if int64(len(buf)) > limit {
		return buf[:limit], true, nil
	}
	return buf, false, nil
}

// readUpTo appends from r to buf until EOF or until buf holds n bytes.
func readUpTo(r io.Reader, buf []byte, n int64) ([]byte, error) {
	for int64(len(buf)) < n {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		room := buf[len(buf):min(int64(cap(buf)), n)]
		m, err := r.Read(room)
		buf = buf[:len(buf)+m]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
	return buf, nil
}

// ReadText reads at most limit bytes of a file as text; truncated is true
// when the file holds more. The bytes are not checked for valid UTF-8.
//
// Operation: GET /files
func (e *Envd) ReadText(ctx context.Context, path string, limit int64) (text string, truncated bool, err error) {
	data, truncated, err := e.ReadFile(ctx, path, limit)
	return string(data), truncated, err
}

// Upload writes the bytes read from r to a file of the sandbox, creating
// parent directories and replacing an existing file. The body is streamed
// as application/octet-stream without being held in memory. r is not
// closed; it may still be read by the HTTP transport until Upload returns,
// never after. A relative path resolves against the user's home. A full
// disk is a provider_error with code insufficient_storage.
//
// Operation: POST /files
func (e *Envd) Upload(ctx context.Context, path string, r io.Reader) (*WriteInfo, error) {
	const op = OpFilesUpload
	if path == "" {
		return nil, invalidArgument(op, "path")
	}
	if r == nil {
		return nil, invalidArgument(op, "r")
	}
	body := &guardedReader{r: r}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.filesURL(path), body)
	if err != nil {
		return nil, &Error{Op: op, Category: Internal}
	}
	// Readers whose remaining length is known get a Content-Length (as
	// http.NewRequest would give them); any other is sent chunked.
	switch v := r.(type) {
	case *bytes.Reader:
		req.ContentLength = int64(v.Len())
	case *bytes.Buffer:
		req.ContentLength = int64(v.Len())
	case *strings.Reader:
		req.ContentLength = int64(v.Len())
	}
	if req.ContentLength == 0 {
		switch r.(type) {
		case *bytes.Reader, *bytes.Buffer, *strings.Reader:
			req.Body = http.NoBody
		}
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	return e.upload(op, req, body, nil)
}

// UploadMultipart is [Envd.Upload] with a multipart/form-data body whose
// "file" field carries the bytes, the form older daemons accept. The body is
// produced by a goroutine that writes into a pipe as the transport reads;
// that goroutine has returned when UploadMultipart returns.
//
// Operation: POST /files
func (e *Envd) UploadMultipart(ctx context.Context, path string, r io.Reader) (*WriteInfo, error) {
	const op = OpFilesUpload
	if path == "" {
		return nil, invalidArgument(op, "path")
	}
	if r == nil {
		return nil, invalidArgument(op, "r")
	}
	src := &guardedReader{r: r}
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.filesURL(path), pr)
	if err != nil {
		return nil, &Error{Op: op, Category: Internal}
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		part, err := mw.CreateFormFile("file", pathpkg.Base(path))
		if err == nil {
			_, err = io.Copy(part, src)
		}
		if err == nil {
			err = mw.Close()
		}
		_ = pw.CloseWithError(err)
	}()
	return e.upload(op, req, src, func() {
		// Unblock the writer if the transport stopped reading early, and
		// wait for it, so that it never outlives the call.
		_ = pr.CloseWithError(errUploadDone)
		<-writerDone
	})
}

var errUploadDone = errors.New("upload finished")

// upload sends req, then stops body from being read any further and runs
// cleanup (if any) before it returns.
func (e *Envd) upload(op string, req *http.Request, body *guardedReader, cleanup func()) (*WriteInfo, error) {
	e.setHeaders(req.Header, false)
	resp, err := e.httpClient.Do(req)
	if cleanup != nil {
		defer cleanup()
	}
	defer body.stop()
	if err != nil {
		return nil, transportError(op, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, filesError(op, resp)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxUploadResponse))
	if err != nil {
		return nil, transportError(op, err)
	}
	var entries []envdapi.UploadedEntry
	if len(data) > 0 {
		if err := json.Unmarshal(data, &entries); err != nil {
			return nil, &Error{Op: op, Category: ProviderError, HTTPStatus: resp.StatusCode, Code: CodeMalformedResponse}
		}
	}
	info := &WriteInfo{Size: body.count()}
	if len(entries) > 0 {
		info.Path, info.Name = entries[0].Path, entries[0].Name
	}
	return info, nil
}

// guardedReader counts the bytes read from r and, once stopped, refuses to
// read any more: the HTTP transport may keep reading a request body after
// the response arrived, and the caller's reader must not be touched after
// the upload returns. stop waits for a Read in progress.
type guardedReader struct {
	mu      sync.Mutex
	r       io.Reader
	n       int64
	stopped bool
}

var errBodyStopped = errors.New("upload body no longer readable")

// Read reads from the caller's reader unless the upload has returned.
func (g *guardedReader) Read(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return 0, errBodyStopped
	}
	n, err := g.r.Read(p)
	g.n += int64(n)
	return n, err
}

func (g *guardedReader) stop() {
	g.mu.Lock()
	g.stopped = true
	g.mu.Unlock()
}

func (g *guardedReader) count() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n
}

// WriteText writes text to a file of the sandbox, creating parent
// directories and replacing an existing file.
//
// Operation: POST /files
func (e *Envd) WriteText(ctx context.Context, path, text string) (*WriteInfo, error) {
	return e.Upload(ctx, path, strings.NewReader(text))
}
