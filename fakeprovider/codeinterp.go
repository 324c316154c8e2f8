package fakeprovider

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sandboxkit/sandboxkit/internal/fakecodeinterp"
)

// OpCodeInterpreterExecute is the code interpreter's POST /execute on a
// sandbox's port 49999, which runs code and streams its output: the
// operation its journal entries carry, and one a [Fault] may name (a
// server relaying the interpreter's failed answer raw is caught there).
const OpCodeInterpreterExecute = fakecodeinterp.OpExecute

// codeInterpPort returns the code interpreter's port as it appears in hosts and
// the E2b-Sandbox-Port header. @e2b/code-interpreter 2.8.0 reaches it like
// envd: on E2B_SANDBOX_URL with headers E2b-Sandbox-Id and
// E2b-Sandbox-Port: 49999 (dist/index.mjs runCode, jupyterUrl via
// getSandboxDirectUrl), or on host "49999-<id>.<domain>" without
// E2B_SANDBOX_URL; envdTarget reads both.
func codeInterpPort() string { return strconv.Itoa(fakecodeinterp.Port) }

// codeInterpreterDaemon is a daemon that can serve the code interpreter
// (fakeenvd's in-memory daemon can).
type codeInterpreterDaemon interface {
	CodeInterpreter() *fakecodeinterp.Server
}

// codeInterpTable keeps the code interpreter of each sandbox daemon that
// was sent a port-49999 request; its zero value is ready to use.
type codeInterpTable struct {
	perDaemon[*fakecodeinterp.Server]
}

// get returns d's code interpreter, making it on first use, and closes
// those of daemons no longer live (killed or expired sandboxes).
func (t *codeInterpTable) get(d codeInterpreterDaemon, key Daemon, live map[Daemon]bool) *fakecodeinterp.Server {
	return t.perDaemon.get(key, live, d.CodeInterpreter, func(s *fakecodeinterp.Server) { s.Close() })
}

// serveCodeInterp serves a request to a sandbox's port 49999 with the
// sandbox's in-process code interpreter, through the same journal and
// fault pipeline as envd. The edge answers are serveEnvd's: 502 "The
// sandbox was not found" for an unknown, killed or paused sandbox, 502
// "port is not open" when its daemon cannot serve a code interpreter.
// Every sandbox with the in-memory daemon has one, whatever its template.
// A daemon that reaches its sandbox's ports ([PortDialer], the namespace
// daemon) serves its own on port 49999 inside the sandbox, and the
// request goes there.
func (p *Provider) serveCodeInterp(w http.ResponseWriter, r *http.Request, rawID string) {
	id := rawID
	if short, err := shortID(rawID); err == nil {
		id = short
	}
	p.serve(w, r, fakecodeinterp.Op(r), id, true, func(w http.ResponseWriter, r *http.Request) {
		var (
			daemon Daemon
			msg    = msgEdgeSandboxNotFound
			live   = map[Daemon]bool{}
			route  portRoute
		)
		p.update(func(time.Time) []Daemon {
			for _, s := range p.sandboxes {
				// Only the table's own kind of key: another daemon type may
				// not be comparable.
				if _, ok := s.daemon.(codeInterpreterDaemon); ok {
					live[s.daemon] = true
				}
			}
			s := p.sandboxes[id]
			switch {
			case s == nil || s.state == StateKilling || s.state.wire() == string(StatePaused):
			case s.daemon == nil:
				msg = msgEdgePortClosed
			default:
				daemon = s.daemon
				if _, inProcess := daemon.(codeInterpreterDaemon); !inProcess {
					route = p.portRouteLocked(id, daemon, codeInterpPort())
				}
			}
			return nil
		})
		if route.dialer != nil {
			p.serveWithCanaries(w, r, func(w http.ResponseWriter, r *http.Request) { p.servePort(w, r, route) })
			return
		}
		ci, ok := daemon.(codeInterpreterDaemon)
		if !ok {
			var port uint64
			if msg != msgEdgeSandboxNotFound || daemon != nil {
				msg, port = msgEdgePortClosed, fakecodeinterp.Port
			}
			p.writeEdgeError(w, r, id, msg, port)
			return
		}
		p.serveWithCanaries(w, r, p.codeInterps.get(ci, daemon, live).ServeHTTP)
	})
}

// serveWithCanaries serves r with h; with [Options.Canaries] a plain-text
// error answer gets the canary suffix (see canaryErrorWriter).
func (p *Provider) serveWithCanaries(w http.ResponseWriter, r *http.Request, h http.HandlerFunc) {
	if !p.canaryMode {
		h(w, r)
		return
	}
	cw := &canaryErrorWriter{ResponseWriter: w}
	h(cw, r)
	cw.finish(p, r)
}

// canaryErrorWriter holds back a plain-text error answer (status >= 400)
// of the code interpreter, so that with [Options.Canaries] its message
// carries the same canary and URL suffix as every other error of the fake
// (see writeError) and a server relaying it raw is caught. Other answers,
// the /execute stream among them, pass through.
type canaryErrorWriter struct {
	http.ResponseWriter
	status int
	held   bytes.Buffer
}

func (c *canaryErrorWriter) holding() bool {
	return c.status >= http.StatusBadRequest && strings.HasPrefix(c.Header().Get("Content-Type"), "text/plain")
}

func (c *canaryErrorWriter) WriteHeader(status int) {
	c.status = status
	if !c.holding() {
		c.ResponseWriter.WriteHeader(status)
	}
}

func (c *canaryErrorWriter) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.WriteHeader(http.StatusOK)
	}
	if c.holding() {
		return c.held.Write(b)
	}
	return c.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController flush the /execute stream.
func (c *canaryErrorWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// finish writes a held error with the canary suffix.
func (c *canaryErrorWriter) finish(p *Provider, r *http.Request) {
	if !c.holding() {
		return
	}
	k := p.canaries.issue(canaryError)
	msg := fmt.Sprintf("%s (request https://api.%s.%s%s ref %s)", c.held.String(), k, DomainSuffix, r.URL.Path, k)
	c.ResponseWriter.WriteHeader(c.status)
	_, _ = io.WriteString(c.ResponseWriter, msg)
}
