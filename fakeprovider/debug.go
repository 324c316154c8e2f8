package fakeprovider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sandboxkit/sandboxkit/internal/envdapi"
	"github.com/sandboxkit/sandboxkit/internal/fakecodeinterp"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// e2b 1.x reads neither E2B_API_URL nor E2B_SANDBOX_URL. Its one way to a
// platform other than https://api.<domain> is debug mode (E2B_DEBUG=true):
//   - the API is http://localhost:3000 (JS e2b@1.13.2 dist/index.mjs
//     ConnectionConfig: apiUrl = debug ? "http://localhost:3000" : ...;
//     Python 1.x connection_config.py the same);
//   - every sandbox port is http://localhost:<port> (index.mjs getHost:
//     debug ? `localhost:${port}`), envd on 49983 and the code
//     interpreter on 49999, and the requests carry no sandbox ID: neither a
//     sandbox host nor the E2b-Sandbox-Id header (the envd transport sends
//     the connection headers and X-Access-Token only);
//   - Sandbox.create makes no API call at all and names the sandbox
//     "debug_sandbox_id" (index.mjs Sandbox.create: if (config.debug)
//     return new this({sandboxId: "debug_sandbox_id", ...})), and kill and
//     setTimeout return at once (index.mjs kill, setTimeout).
//
// So a request on a debug sandbox port is routed by elimination: to the
// only running sandbox, to a sandbox the fake starts for it when none runs
// (the SDK never asked for one), and to none, with a 502 that says why,
// when several run.

// Default debug addresses: where e2b 1.x looks in debug mode.
const (
	DebugAPIAddr             = "localhost:3000"
	DebugEnvdAddr            = "localhost:49983"
	DebugCodeInterpreterAddr = "localhost:49999"
)

// DebugAddrs are the loopback addresses [ListenDebug] serves. Tests give
// ":0" ports so that they never contend for the fixed ones.
type DebugAddrs struct {
	// API serves the control plane (e2b 1.x: localhost:3000).
	API string
	// Envd serves sandbox port 49983 (envd).
	Envd string
	// CodeInterpreter serves sandbox port 49999 (the code interpreter).
	CodeInterpreter string
}

// DefaultDebugAddrs returns the addresses e2b 1.x calls in debug mode.
func DefaultDebugAddrs() DebugAddrs {
	return DebugAddrs{API: DebugAPIAddr, Envd: DebugEnvdAddr, CodeInterpreter: DebugCodeInterpreterAddr}
}

// DebugServers are the listeners of [ListenDebug].
type DebugServers struct {
	// API, Envd and CodeInterpreter serve the addresses of [DebugAddrs].
	API, Envd, CodeInterpreter *Server
}

// Close stops every listener.
func (d *DebugServers) Close() error {
	var errs []error
	for _, s := range []*Server{d.API, d.Envd, d.CodeInterpreter} {
		if s != nil {
			errs = append(errs, s.Close())
		}
	}
	return errors.Join(errs...)
}

// ListenDebug serves h where e2b 1.x looks in debug mode: h behind
// [DebugAPIHandler] on addrs.API, and h behind [DebugPortHandler] for ports 49983 and 49999 on
// addrs.Envd and addrs.CodeInterpreter. h is a Provider, or a handler
// fronting Providers that passes the request (and its context) on. It
// fails, closing what it opened, when an address is taken.
func ListenDebug(h http.Handler, addrs DebugAddrs) (*DebugServers, error) {
	d := &DebugServers{}
	var err error
	if d.API, err = ListenHandler(addrs.API, DebugAPIHandler(h)); err != nil {
		return nil, fmt.Errorf("fakeprovider: e2b 1.x debug API: %w", err)
	}
	if d.Envd, err = ListenHandler(addrs.Envd, DebugPortHandler(h, sandbox.EnvdPort)); err != nil {
		_ = d.Close()
		return nil, fmt.Errorf("fakeprovider: e2b 1.x debug envd port: %w", err)
	}
	if d.CodeInterpreter, err = ListenHandler(addrs.CodeInterpreter, DebugPortHandler(h, fakecodeinterp.Port)); err != nil {
		_ = d.Close()
		return nil, fmt.Errorf("fakeprovider: e2b 1.x debug code interpreter port: %w", err)
	}
	return d, nil
}

// DebugSandboxID is the sandbox ID e2b 1.x gives itself in debug mode
// without asking the platform (JS e2b@1.13.2 dist/index.mjs Sandbox.create;
// Python 1.x Sandbox.__init__), and then sends to the API: connect and
// getInfo call GET /sandboxes/debug_sandbox_id.
const DebugSandboxID = "debug_sandbox_id"

// debugAPIKey is the context key that marks a request on the debug API.
type debugAPIKey struct{}

// DebugAPIHandler returns h serving every request as one on e2b 1.x's
// debug API ("http://localhost:3000"): a Provider reads the path segment
// [DebugSandboxID] as the sandbox the debug ports route to.
func DebugAPIHandler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), debugAPIKey{}, true)))
	})
}

// debugAPIRequest returns r with the path segment [DebugSandboxID]
// replaced by the sandbox the debug ports route to, when r came on the
// debug API and one sandbox runs; else r.
func (p *Provider) debugAPIRequest(r *http.Request) *http.Request {
	if on, _ := r.Context().Value(debugAPIKey{}).(bool); !on || !strings.Contains(r.URL.Path, "/"+DebugSandboxID) {
		return r
	}
	id := p.runningSandbox()
	if id == "" {
		return r
	}
	r = r.Clone(r.Context())
	r.URL.Path = strings.ReplaceAll(r.URL.Path, "/"+DebugSandboxID, "/"+id)
	r.URL.RawPath = ""
	return r
}

// runningSandbox returns the only running sandbox, or "".
func (p *Provider) runningSandbox() string {
	ids := p.runningIDs()
	if len(ids) != 1 {
		return ""
	}
	return ids[0]
}

// runningIDs returns the running sandboxes' IDs.
func (p *Provider) runningIDs() []string {
	var ids []string
	p.update(func(time.Time) []Daemon {
		for sid, s := range p.sandboxes {
			if s.state == StateRunning {
				ids = append(ids, sid)
			}
		}
		return nil
	})
	return ids
}

// debugPortKey is the context key of the sandbox port a debug listener
// stands for.
type debugPortKey struct{}

// DebugPortHandler returns h serving every request as one that arrived on
// sandbox port port of e2b 1.x debug mode ("http://localhost:<port>"): a
// Provider routes it to a sandbox by elimination (see [ListenDebug]).
// Requests that name their sandbox (E2b-Sandbox-Id, a sandbox host) keep
// it.
func DebugPortHandler(h http.Handler, port int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), debugPortKey{}, port)))
	})
}

// debugPort returns the sandbox port a debug listener stands for.
func debugPort(ctx context.Context) (int, bool) {
	port, ok := ctx.Value(debugPortKey{}).(int)
	return port, ok
}

// msgDebugAmbiguous is the 502 message for a debug-port request when more
// than one sandbox runs.
const msgDebugAmbiguous = "sandboxkit fake: %d sandboxes are running and this request on debug port %d names none " +
	"(e2b 1.x in debug mode sends no sandbox ID), so it cannot be routed; debug mode serves one sandbox at a time"

// serveDebugPort routes a request that arrived on a debug sandbox port
// without naming a sandbox: to the only running sandbox, to one the fake
// starts when none runs, and to none (502, [DebugEvent] Ambiguous) when
// several run.
func (p *Provider) serveDebugPort(w http.ResponseWriter, r *http.Request, port int) {
	id, running := p.debugSandbox()
	if id == "" {
		p.noteDebug(DebugEvent{Port: port, Running: running, Ambiguous: true})
		p.serve(w, r, "", "", true, func(w http.ResponseWriter, r *http.Request) {
			p.writeJSON(w, http.StatusBadGateway, edgeError{
				Message: fmt.Sprintf(msgDebugAmbiguous, running, port), Port: uint64(port), Code: http.StatusBadGateway,
			})
		})
		return
	}
	r = r.Clone(r.Context())
	r.Header.Set(envdapi.SandboxIDHeader, id)
	r.Header.Set(envdapi.SandboxPortHeader, strconv.Itoa(port))
	p.ServeHTTP(w, r)
}

// debugSandbox returns the ID of the sandbox a debug-port request goes to,
// starting one when none runs, or "" and how many run when that is more
// than one.
func (p *Provider) debugSandbox() (id string, running int) {
	p.debugMu.Lock()
	defer p.debugMu.Unlock()
	ids := p.runningIDs()
	switch len(ids) {
	case 0:
		id = p.AddSandbox(SandboxSeed{})
		p.update(func(time.Time) []Daemon {
			if s := p.sandboxes[id]; s != nil {
				s.startedForDebug = true
			}
			return nil
		})
		p.noteDebug(DebugEvent{Started: id})
		return id, 1
	case 1:
		return ids[0], 1
	}
	return "", len(ids)
}

// A DebugEvent is a routing decision on a debug sandbox port worth telling
// the user (see [Options.OnDebugRoute]).
type DebugEvent struct {
	// Started is the sandbox the fake started because a debug-port request
	// came while none ran (e2b 1.x debug mode never calls create).
	Started string
	// Ambiguous: Running sandboxes ran, so a request on Port went nowhere.
	Ambiguous bool
	Port      int
	Running   int
}

// String says what happened, for a console line.
func (e DebugEvent) String() string {
	if e.Started != "" {
		return fmt.Sprintf("e2b 1.x debug mode: a request named no sandbox and none was running, so the fake started %s for it (debug mode never calls create)", e.Started)
	}
	return fmt.Sprintf("e2b 1.x debug mode: %d sandboxes were running and a request on port %d named none; it got 502 (debug mode serves one sandbox at a time)", e.Running, e.Port)
}

// noteDebug passes e to [Options.OnDebugRoute], if set.
func (p *Provider) noteDebug(e DebugEvent) {
	if p.onDebugRoute != nil {
		p.onDebugRoute(e)
	}
}
