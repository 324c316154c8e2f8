package fakeprovider

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sandboxkit/sandboxkit/internal/envdapi"
	"github.com/sandboxkit/sandboxkit/internal/fakeenvd"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// envdPort returns the daemon's port as it appears in hosts and headers.
func envdPort() string { return strconv.Itoa(sandbox.EnvdPort) }

// envdTarget tells whether r is addressed to a sandbox rather than to the
// control plane, and returns the sandbox ID and port. A request is for a
// sandbox when it carries E2b-Sandbox-Id (port from E2b-Sandbox-Port,
// default 49983), or when its host is "<port>-<sandboxID>.<domain>".
func envdTarget(r *http.Request) (id, port string, ok bool) {
	if id := r.Header.Get(envdapi.SandboxIDHeader); id != "" {
		port := r.Header.Get(envdapi.SandboxPortHeader)
		if port == "" {
			port = envdPort()
		}
		return id, port, true
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	label, rest, found := strings.Cut(host, ".")
	if !found || rest == "" {
		return "", "", false
	}
	port, id, found = strings.Cut(label, "-")
	if !found || id == "" || port == "" || strings.Trim(port, "0123456789") != "" {
		return "", "", false
	}
	return id, port, true
}

// envdTarget is [envdTarget], and also finds the sandbox of a signed
// /files URL that carries neither the sandbox header nor a sandbox host:
// the SDK builds those on the one shared E2B_SANDBOX_URL (e2b@2.51.0
// index.mjs:5825 fileUrl, 1384 getSandboxDirectUrl). The signature is a
// hash over the path, operation, user and the sandbox's access token
// (index.mjs:1427-1438), so exactly one secured sandbox matches.
func (p *Provider) envdTarget(r *http.Request) (id, port string, ok bool) {
	if id, port, ok := envdTarget(r); ok {
		return id, port, true
	}
	if r.URL.Path != envdapi.FilesPath || (r.Method != http.MethodGet && r.Method != http.MethodPost) {
		return "", "", false
	}
	q := r.URL.Query()
	if q.Get("signature") == "" {
		return "", "", false
	}
	op := envdapi.SignRead
	if r.Method == http.MethodPost {
		op = envdapi.SignWrite
	}
	exp, err := fakeenvd.SignatureExpiration(q)
	if err != nil {
		return "", "", false
	}
	p.update(func(time.Time) []Daemon {
		for sid, s := range p.sandboxes {
			if s.envdAccessToken == "" {
				continue
			}
			if fakeenvd.SignatureMatches(q, q.Get("path"), op, s.envdAccessToken, exp) {
				id, ok = sid, true
				return nil
			}
		}
		return nil
	})
	return id, envdPort(), ok
}

// newEnvdMux returns a mux used only to name the envd operation a request
// matches (its handlers never run).
func (p *Provider) newEnvdMux() *http.ServeMux {
	mux := http.NewServeMux()
	nop := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	for _, op := range sandbox.EnvdOps() {
		mux.Handle(op, nop)
	}
	mux.Handle("/", nop)
	return mux
}

// envdOp returns the envd route-table operation r matches, or "".
func (p *Provider) envdOp(r *http.Request) string {
	_, pattern := p.envdMux.Handler(r)
	if pattern == "/" {
		return ""
	}
	return pattern
}

// edgeError is the platform edge's JSON answer for a request it cannot
// route to a sandbox's port (e2b-dev/infra packages/shared/pkg/proxy/
// template: sandbox_not_found.go, port_closed.go). The SDKs read only the
// status (502: the sandbox is not running) and message.
type edgeError struct {
	SandboxID string `json:"sandboxId"`
	Message   string `json:"message"`
	Port      uint64 `json:"port,omitempty"`
	Code      int    `json:"code"`
}

// Messages of the platform's edge.
const (
	msgEdgeSandboxNotFound = "The sandbox was not found"
	msgEdgePortClosed      = "The sandbox is running but port is not open"
)

// writeEdgeError writes the edge's 502 body. With [Options.Canaries] the
// message carries the same canary and URL suffix as every other error of
// the fake (see writeError); without, it is the platform's text alone.
func (p *Provider) writeEdgeError(w http.ResponseWriter, r *http.Request, id, msg string, port uint64) {
	if p.canaryMode {
		c := p.canaries.issue(canaryError)
		msg = fmt.Sprintf("%s (request https://api.%s.%s%s ref %s)", msg, c, DomainSuffix, r.URL.Path, c)
	}
	p.writeJSON(w, http.StatusBadGateway, edgeError{SandboxID: id, Message: msg, Port: port, Code: http.StatusBadGateway})
}

// serveEnvd forwards an envd request to its sandbox's daemon. When the
// sandbox is unknown, expired, killed or paused it answers 502 "The sandbox
// was not found" with the sandboxId, as the platform's edge proxy does (a
// paused sandbox is not in the edge's routing catalog); when the port is not
// the daemon's, or the sandbox has no daemon, 502 "port is not open";
// another port of a daemon that reaches its sandbox's ports ([PortDialer])
// goes to that port.
func (p *Provider) serveEnvd(w http.ResponseWriter, r *http.Request, rawID, port string) {
	id := rawID
	if short, err := shortID(rawID); err == nil {
		id = short
	}
	p.serve(w, r, p.envdOp(r), id, true, func(w http.ResponseWriter, r *http.Request) {
		var (
			daemon Daemon
			msg    string
			open   bool // the sandbox runs; only the port is wrong
			route  portRoute
		)
		p.update(func(time.Time) []Daemon {
			s := p.sandboxes[id]
			switch {
			case s == nil || s.state == StateKilling || s.state.wire() == string(StatePaused):
				msg = msgEdgeSandboxNotFound
			case port != envdPort() && s.daemon != nil:
				if route = p.portRouteLocked(id, s.daemon, port); route.dialer == nil {
					msg, open = msgEdgePortClosed, true
				}
			case port != envdPort() || s.daemon == nil:
				msg, open = msgEdgePortClosed, true
			default:
				daemon = s.daemon
			}
			return nil
		})
		if route.dialer != nil {
			p.servePort(w, r, route)
			return
		}
		if daemon == nil {
			var n uint64
			if open {
				n, _ = strconv.ParseUint(port, 10, 64)
			}
			p.writeEdgeError(w, r, id, msg, n)
			return
		}
		daemon.ServeHTTP(w, r)
	})
}
