package fakeprovider

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sandboxkit/sandboxkit/internal/envdapi"
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

// serveEnvd forwards an envd request to its sandbox's daemon, answering 502
// in E2B's error shape, as the platform's edge proxy does, when the sandbox
// is unknown, expired, killed or paused, when the port is not the daemon's,
// or when the sandbox has no daemon.
func (p *Provider) serveEnvd(w http.ResponseWriter, r *http.Request, rawID, port string) {
	id := rawID
	if short, err := shortID(rawID); err == nil {
		id = short
	}
	p.serve(w, r, p.envdOp(r), id, true, func(w http.ResponseWriter, r *http.Request) {
		var (
			daemon Daemon
			msg    string
		)
		p.update(func(time.Time) []Daemon {
			s := p.sandboxes[id]
			switch {
			case s == nil || s.state == StateKilling:
				msg = fmt.Sprintf("The sandbox %q was not found", id)
			case s.state.wire() == string(StatePaused):
				msg = fmt.Sprintf("The sandbox %q is paused", id)
			case port != envdPort():
				msg = fmt.Sprintf("The sandbox %q is running but port %s is not open", id, port)
			case s.daemon == nil:
				msg = fmt.Sprintf("The sandbox %q has no daemon", id)
			default:
				daemon = s.daemon
			}
			return nil
		})
		if daemon == nil {
			p.writeError(w, r, http.StatusBadGateway, msg)
			return
		}
		daemon.ServeHTTP(w, r)
	})
}
