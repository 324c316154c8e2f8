package fakecodeinterp

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// Port is the sandbox port of the code interpreter's server
// (@e2b/code-interpreter 2.8.0 dist/index.mjs JUPYTER_PORT; Python
// e2b_code_interpreter/constants.py JUPYTER_PORT).
const Port = 49999

// DefaultCwd is the working directory of a context created without one
// (template/server/main.py post_contexts: request.cwd or "/home/user").
const DefaultCwd = "/home/user"

// maxRequestBody bounds the JSON body of /execute and /contexts.
const maxRequestBody = 8 << 20

// Languages of the code interpreter, as normalize_language spells them
// (template/server/contexts.py: "" → python, "js" → javascript, "ts" →
// typescript).
const (
	LangPython     = "python"
	LangJavaScript = "javascript"
	LangTypeScript = "typescript"
	LangBash       = "bash"
)

// Shell runs a bash script for the bash language: in dir, with exactly
// env as its environment, writing to stdout and stderr, and returns the
// exit status. The fake provider passes its in-memory shell, so bash code
// runs in-process like every other command of the fake.
type Shell func(ctx context.Context, script, dir string, env map[string]string, stdout, stderr io.Writer) int

// Config configures a [Server].
type Config struct {
	// EnvVars are the sandbox's environment variables: every context starts
	// with them, and a per-execution variable of the same name is reset to
	// them afterwards (template/server/messaging.py _reset_env_vars_code).
	EnvVars map[string]string
	// Shell runs the bash language; without it, bash contexts cannot be
	// created.
	Shell Shell
	// FS is the sandbox filesystem of Python's open(); without it open()
	// raises OSError.
	FS FS
	// Processes, when set, runs python and javascript contexts in real
	// interpreter processes instead of the in-process interpreters (the
	// fake's namespace sandboxes); FS then plays no part.
	Processes *Processes
	// Now is the clock of the stdout/stderr timestamps; time.Now if nil.
	Now func() time.Time
}

// Server is the code interpreter of one sandbox: the HTTP surface of
// e2b-dev/code-interpreter's template/server on [Port]. It is an
// http.Handler.
type Server struct {
	cfg Config
	mux *http.ServeMux

	mu       sync.Mutex
	contexts map[string]*codeContext
	defaults map[string]string // language → ID of its default context
	closed   bool
}

// New returns a Server with the two default contexts the real server
// creates at start-up, python and javascript in /home/user
// (template/server/main.py lifespan).
func New(cfg Config) *Server {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{cfg: cfg, contexts: map[string]*codeContext{}, defaults: map[string]string{}}
	for _, lang := range []string{LangPython, LangJavaScript} {
		c, msg := s.createContext(lang, DefaultCwd)
		if c == nil {
			panic("fakecodeinterp.New: " + msg) // both kernels are built in
		}
		s.defaults[lang] = c.id
	}
	s.mux = s.routes()
	return s
}

func (s *Server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, "OK") })
	mux.HandleFunc(OpExecute, s.handleExecute)
	mux.HandleFunc("POST /contexts", s.handleCreateContext)
	mux.HandleFunc("GET /contexts", s.handleListContexts)
	mux.HandleFunc("POST /contexts/{id}/restart", s.handleRestartContext)
	mux.HandleFunc("DELETE /contexts/{id}", s.handleRemoveContext)
	return mux
}

// ServeHTTP serves the code interpreter's routes; FastAPI's 404 body for
// any other path.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mux.ServeHTTP(w, r)
}

// Close is the sandbox going away: it interrupts every running execution,
// whose stream is then cut, and drops every context; later requests find
// no context. It may be called many times.
func (s *Server) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for id, c := range s.contexts {
		c.interrupt(errServerClosed)
		c.closeKernel()
		delete(s.contexts, id)
	}
}

// Context is a code context as the server returns it
// (template/server/api/models/context.py).
type Context struct {
	ID       string `json:"id"`
	Language string `json:"language"`
	Cwd      string `json:"cwd"`
}

// executeRequest is the body of POST /execute
// (template/server/api/models/execution_request.py; the SDK sends code,
// context_id, language and env_vars: dist/index.mjs runCode).
type executeRequest struct {
	Code      string            `json:"code"`
	ContextID string            `json:"context_id"`
	Language  string            `json:"language"`
	EnvVars   map[string]string `json:"env_vars"`
}

// createContextRequest is the body of POST /contexts
// (template/server/api/models/create_context.py; dist/index.mjs
// createCodeContext sends language and cwd).
type createContextRequest struct {
	Language string `json:"language"`
	Cwd      string `json:"cwd"`
}

var (
	errContextRemoved   = errors.New("the context was removed")
	errContextRestarted = errors.New("the context was restarted")
	errServerClosed     = errors.New("the sandbox is gone")
)

// normalizeLanguage follows template/server/contexts.py normalize_language.
func normalizeLanguage(lang string) string {
	lang = strings.ToLower(strings.TrimSpace(lang))
	switch lang {
	case "":
		return LangPython
	case "js":
		return LangJavaScript
	case "ts":
		return LangTypeScript
	}
	return lang
}

func (s *Server) handleExecute(w http.ResponseWriter, r *http.Request) {
	var req executeRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if req.ContextID != "" && req.Language != "" {
		// template/server/main.py post_execute
		writeText(w, http.StatusBadRequest, "Only one of context_id or language can be provided")
		return
	}
	c, status, msg := s.contextFor(req)
	if c == nil {
		writeText(w, status, msg)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	out := newEmitter(w, s.cfg.Now)
	if !c.execute(r.Context(), req.Code, req.EnvVars, s.cfg.EnvVars, out) {
		// The sandbox went away under the cell: cut the connection, as the
		// fake's envd cuts its streams (the SDK then finds the sandbox not
		// running and says it was killed: dist/index.mjs handleRequestError).
		panic(http.ErrAbortHandler)
	}
	out.end()
}

// contextFor finds the context an execution runs in: the named one, else
// the language's default context (created on first use), else python's
// (template/server/main.py post_execute).
func (s *Server) contextFor(req executeRequest) (*codeContext, int, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if req.ContextID != "" {
		if c := s.contexts[req.ContextID]; c != nil {
			return c, 0, ""
		}
		return nil, http.StatusNotFound, fmt.Sprintf("Context %s not found", req.ContextID)
	}
	lang := normalizeLanguage(req.Language)
	if id, ok := s.defaults[lang]; ok {
		if c := s.contexts[id]; c != nil {
			return c, 0, ""
		}
	}
	c, msg := s.createContextLocked(lang, DefaultCwd)
	if c == nil {
		return nil, http.StatusInternalServerError, msg
	}
	s.defaults[lang] = c.id
	return c, 0, ""
}

func (s *Server) handleCreateContext(w http.ResponseWriter, r *http.Request) {
	var req createContextRequest
	if !decodeBody(w, r, &req) {
		return
	}
	cwd := req.Cwd
	if cwd == "" {
		cwd = DefaultCwd
	}
	c, msg := s.createContext(normalizeLanguage(req.Language), cwd)
	if c == nil {
		writeText(w, http.StatusInternalServerError, msg)
		return
	}
	writeJSON(w, http.StatusOK, c.describe())
}

// createContext adds a context, or returns nil and the server's 500
// message.
func (s *Server) createContext(lang, cwd string) (*codeContext, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.createContextLocked(lang, cwd)
}

func (s *Server) createContextLocked(lang, cwd string) (*codeContext, string) {
	if s.closed {
		return nil, "Failed to create context: the sandbox is gone"
	}
	c := &codeContext{id: newContextID(), language: lang, cwd: cwd, newKernel: s.kernelFactory(lang)}
	if c.newKernel == nil {
		// The real server fails in Jupyter's POST /api/sessions with an
		// unknown kernel name and answers 500 "Failed to create context: ..."
		// (template/server/contexts.py create_context).
		return nil, fmt.Sprintf("Failed to create context: no kernel for language %q in the fake code interpreter (it runs python, javascript and bash)", lang)
	}
	c.kernel = c.newKernel(cwd, s.cfg.EnvVars)
	s.contexts[c.id] = c
	return c, ""
}

// kernelFactory returns the constructor of lang's kernel, or nil.
func (s *Server) kernelFactory(lang string) func(cwd string, env map[string]string) kernel {
	if p := s.cfg.Processes; p != nil && p.command(lang, nil) != nil {
		return func(cwd string, env map[string]string) kernel { return newProcKernel(p, lang, cwd, env) }
	}
	switch lang {
	case LangPython, "python3": // python3 is Jupyter's own kernel name
		return func(cwd string, env map[string]string) kernel {
			k := newPythonKernel(cwd, env)
			k.fs = s.cfg.FS
			return k
		}
	case LangJavaScript, LangTypeScript:
		return func(cwd string, env map[string]string) kernel { return newJSKernel(cwd, env) }
	case LangBash:
		if s.cfg.Shell == nil {
			return nil
		}
		return func(cwd string, env map[string]string) kernel { return newBashKernel(s.cfg.Shell, cwd, env) }
	}
	return nil
}

func (s *Server) handleListContexts(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	list := make([]Context, 0, len(s.contexts))
	for _, c := range s.contexts {
		list = append(list, c.describe())
	}
	s.mu.Unlock()
	sort.Slice(list, func(i, j int) bool { return list[i].ID < list[j].ID })
	writeJSON(w, http.StatusOK, list)
}

func (s *Server) handleRestartContext(w http.ResponseWriter, r *http.Request) {
	c := s.lookup(r.PathValue("id"))
	if c == nil {
		writeText(w, http.StatusNotFound, fmt.Sprintf("Context %s not found", r.PathValue("id")))
		return
	}
	c.restart(s.cfg.EnvVars)
	writeJSON(w, http.StatusOK, nil)
}

func (s *Server) handleRemoveContext(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mu.Lock()
	c := s.contexts[id]
	delete(s.contexts, id)
	s.mu.Unlock()
	if c == nil {
		writeText(w, http.StatusNotFound, fmt.Sprintf("Context %s not found", id))
		return
	}
	c.interrupt(errContextRemoved)
	c.closeKernel()
	writeJSON(w, http.StatusOK, nil)
}

func (s *Server) lookup(id string) *codeContext {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.contexts[id]
}

// decodeBody reads a JSON body; a malformed one gets FastAPI's 422.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(io.LimitReader(r.Body, maxRequestBody))
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"detail": []map[string]any{{
			"type": "json_invalid", "loc": []any{"body"}, "msg": "JSON decode error",
		}}})
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeText(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, msg)
}

// newContextID returns a UUID v4, the form of a Jupyter kernel ID.
func newContextID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// OpExecute is the route that runs code and streams its output (the
// journal's and fault table's operation for it).
const OpExecute = "POST /execute"

// Ops lists every route [Op] names, in a stable order.
func Ops() []string {
	return []string{"GET /health", OpExecute, "GET /contexts", "POST /contexts", "POST /contexts/{id}/restart", "DELETE /contexts/{id}"}
}

// Op names the route r matches as "METHOD /pattern" (the journal's and
// fault table's operation for a request to port 49999), or "" for none.
func Op(r *http.Request) string {
	p := r.URL.Path
	switch {
	case p == "/health" && r.Method == http.MethodGet:
		return "GET /health"
	case p == "/execute" && r.Method == http.MethodPost:
		return OpExecute
	case p == "/contexts" && (r.Method == http.MethodGet || r.Method == http.MethodPost):
		return r.Method + " /contexts"
	}
	rest, ok := strings.CutPrefix(p, "/contexts/")
	if !ok || rest == "" {
		return ""
	}
	id, tail, _ := strings.Cut(rest, "/")
	switch {
	case id != "" && tail == "restart" && r.Method == http.MethodPost:
		return "POST /contexts/{id}/restart"
	case id != "" && tail == "" && !strings.HasSuffix(rest, "/") && r.Method == http.MethodDelete:
		return "DELETE /contexts/{id}"
	}
	return ""
}
