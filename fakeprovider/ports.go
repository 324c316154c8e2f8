package fakeprovider

import (
	"bytes"
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
)

// PortDialer is a [Daemon] whose sandbox runs real servers and can reach
// them: the namespace daemon ([NamespaceDaemon]) is one. The fake routes a
// request for any other port than envd's, on host
// "<port>-<sandboxID>.<domain>" or with header E2b-Sandbox-Port (what the
// SDKs' getHost/get_host name), to the server listening on that port of
// the sandbox's loopback, as the platform's edge does. The in-memory
// daemon is none: its sandboxes have no ports but envd's (and the code
// interpreter's), and every other port gets the edge's 502 "port is not
// open".
type PortDialer interface {
	// DialPort connects to port inside the sandbox; an error means
	// nothing listens there or the sandbox is gone.
	DialPort(ctx context.Context, port int) (net.Conn, error)
}

// portRoute is a request's way to a sandbox port: the daemon that dials
// it and the transport that pools its connections.
type portRoute struct {
	sandboxID string
	port      int
	dialer    PortDialer
	transport *http.Transport
}

// portTransports keeps one transport per PortDialer daemon, so that
// keep-alive connections to a sandbox's servers are reused; its zero
// value is ready to use.
type portTransports struct{ perDaemon[*http.Transport] }

// get returns d's transport, making it on first use, and drops those of
// daemons no longer live (killed or expired sandboxes).
func (t *portTransports) get(d PortDialer, key Daemon, live map[Daemon]bool) *http.Transport {
	return t.perDaemon.get(key, live, func() *http.Transport {
		return &http.Transport{
			DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
				_, port, err := net.SplitHostPort(addr)
				if err != nil {
					return nil, err
				}
				n, err := strconv.Atoi(port)
				if err != nil {
					return nil, err
				}
				return d.DialPort(ctx, n)
			},
		}
	}, (*http.Transport).CloseIdleConnections)
}

// portRouteLocked returns the route to port of sandbox id, whose daemon is
// d, or a route without dialer when d reaches no ports or port is not a
// port number. p.mu is held.
func (p *Provider) portRouteLocked(id string, d Daemon, port string) portRoute {
	dialer, ok := d.(PortDialer)
	n, err := strconv.Atoi(port)
	if !ok || err != nil || n < 1 || n > 65535 {
		return portRoute{}
	}
	live := map[Daemon]bool{}
	for _, s := range p.sandboxes {
		// Only the table's own kind of key: another daemon type may not
		// be comparable.
		if _, ok := s.daemon.(PortDialer); ok {
			live[s.daemon] = true
		}
	}
	return portRoute{sandboxID: id, port: n, dialer: dialer, transport: p.portTransports.get(dialer, d, live)}
}

// servePort forwards r to the server on route's sandbox port: streamed
// both ways (server-sent events and the code interpreter's /execute
// lines arrive as they are written), WebSocket upgrades included. When
// nothing listens there, or the sandbox went away, the answer is the
// edge's 502 "The sandbox is running but port is not open" with the port
// (e2b-dev/infra packages/shared/pkg/proxy/template/port_closed.go).
func (p *Provider) servePort(w http.ResponseWriter, r *http.Request, route portRoute) {
	if err := bufferBody(r); err != nil {
		http.Error(w, "reading the request body failed", http.StatusBadRequest)
		return
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme = "http"
			pr.Out.URL.Host = net.JoinHostPort("127.0.0.1", strconv.Itoa(route.port))
			pr.Out.Host = pr.In.Host
		},
		Transport:     route.transport,
		FlushInterval: -1,
		// No log line: it would carry the request URL.
		ErrorLog: log.New(io.Discard, "", 0),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, _ error) {
			p.writeEdgeError(w, r, route.sandboxID, msgEdgePortClosed, uint64(route.port))
		},
	}
	proxy.ServeHTTP(w, r)
}

// maxBufferedBody bounds the part of a request body bufferBody reads
// before forwarding.
const maxBufferedBody = 64 << 20

// bufferBody reads r's body (up to maxBufferedBody) before it is
// forwarded: a streamed answer (the /execute lines) starts before the
// forwarded body has gone through, and an HTTP/1 server may close a
// request body once its answer has started, which cut such streams
// (nsexec.Sandbox.ServeHTTP does the same for envd). A longer body
// streams on after its first maxBufferedBody bytes.
func bufferBody(r *http.Request) error {
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	head, err := io.ReadAll(io.LimitReader(r.Body, maxBufferedBody))
	if err != nil {
		return err
	}
	if len(head) < maxBufferedBody {
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(head)), int64(len(head))
		r.Header.Del("Transfer-Encoding")
		return nil
	}
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
	return nil
}
