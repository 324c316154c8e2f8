package fakecodeinterp

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"time"
)

// Message types of the /execute stream: one JSON object per line. The
// server's OutputType enum (e2b-dev/code-interpreter template/server/api/
// models/output.py) and the SDK's parseOutput switch (@e2b/code-interpreter
// 2.8.0 dist/index.mjs parseOutput; e2b_code_interpreter/models.py
// parse_output) agree on these names.
const (
	typeStdout          = "stdout"
	typeStderr          = "stderr"
	typeResult          = "result"
	typeError           = "error"
	typeNumberOfExecs   = "number_of_executions"
	typeEndOfExecution  = "end_of_execution"
	unexpectedEndName   = "UnexpectedEndOfExecution"
	unexpectedEndValue  = "Connection to the execution was closed before the execution was finished"
	timestampLayoutJSON = time.RFC3339Nano
)

// Result is one rich output of an execution: the value of the cell's last
// expression (IsMainResult) or a display() call. The field names are those
// the server's Result model dumps after mapping MIME types (template/server/
// api/models/result.py: text/plain → text, image/png → png, ...).
type Result struct {
	Text         string         `json:"text,omitempty"`
	HTML         string         `json:"html,omitempty"`
	Markdown     string         `json:"markdown,omitempty"`
	SVG          string         `json:"svg,omitempty"`
	PNG          string         `json:"png,omitempty"`
	JPEG         string         `json:"jpeg,omitempty"`
	JSON         map[string]any `json:"json,omitempty"`
	IsMainResult bool           `json:"is_main_result"`
}

// ExecError is a failed execution as the kernel reports it (Jupyter's
// ename, evalue and traceback; template/server/api/models/error.py).
type ExecError struct {
	Name      string `json:"name"`
	Value     string `json:"value"`
	Traceback string `json:"traceback"`
}

func (e *ExecError) Error() string { return e.Name + ": " + e.Value }

// emitter writes the /execute stream: each message is one JSON line, flushed
// at once so the SDK's callbacks (onStdout, onResult) fire while the code
// runs, as they do against Jupyter.
type emitter struct {
	mu  sync.Mutex
	w   http.ResponseWriter
	rc  *http.ResponseController
	now func() time.Time
	err error // the first write error: the client went away
}

func newEmitter(w http.ResponseWriter, now func() time.Time) *emitter {
	return &emitter{w: w, rc: http.NewResponseController(w), now: now}
}

func (e *emitter) send(msg map[string]any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err != nil {
		return
	}
	b, err := json.Marshal(msg)
	if err != nil {
		e.err = err
		return
	}
	if _, err := e.w.Write(append(b, '\n')); err != nil {
		e.err = err
		return
	}
	_ = e.rc.Flush() // a writer that cannot flush still gets the line at the end
}

// log sends one stdout or stderr chunk with the kernel's timestamp
// (template/server/api/models/logs.py Stdout/Stderr).
func (e *emitter) log(stream, text string) {
	if text == "" {
		return
	}
	e.send(map[string]any{"type": stream, "text": text, "timestamp": e.now().UTC().Format(timestampLayoutJSON)})
}

func (e *emitter) result(r Result) {
	b, _ := json.Marshal(r)
	msg := map[string]any{}
	_ = json.Unmarshal(b, &msg)
	msg["type"] = typeResult
	e.send(msg)
}

func (e *emitter) error(x *ExecError) {
	e.send(map[string]any{"type": typeError, "name": x.Name, "value": x.Value, "traceback": x.Traceback})
}

func (e *emitter) count(n int) {
	e.send(map[string]any{"type": typeNumberOfExecs, "execution_count": n})
}

// end closes the stream as StreamingListJsonResponse does after the last
// item (template/server/stream.py).
func (e *emitter) end() { e.send(map[string]any{"type": typeEndOfExecution}) }

// streamWriter is an io.Writer that sends each write as one stdout or
// stderr message.
type streamWriter struct {
	e      *emitter
	stream string
}

func (s streamWriter) Write(p []byte) (int, error) {
	s.e.log(s.stream, string(p))
	return len(p), nil
}

// lineWriter passes whole lines to w and keeps a partial line until the
// next newline or flush: a shell writes "hi" and "\n" separately, and
// Jupyter's bash kernel sends the line as one stream message.
type lineWriter struct {
	w   io.Writer
	buf []byte
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.buf = append(l.buf, p...)
	if i := bytes.LastIndexByte(l.buf, '\n'); i >= 0 {
		if _, err := l.w.Write(l.buf[:i+1]); err != nil {
			return 0, err
		}
		l.buf = append(l.buf[:0], l.buf[i+1:]...)
	}
	return len(p), nil
}

// flush writes the partial line, if any.
func (l *lineWriter) flush() {
	if len(l.buf) > 0 {
		_, _ = l.w.Write(l.buf)
		l.buf = l.buf[:0]
	}
}
