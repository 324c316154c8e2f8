package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxkit/sandboxkit/server"
)

// rawTarget is a target the kit can send hand-made JSON-RPC messages to:
// the protocol specs need requests the SDK's client never sends (an
// initialize offering 2026-07-28, a request at an unknown version).
type rawTarget interface {
	rawConnection(ctx context.Context) (mcp.Connection, error)
}

// httpEndpoint is a target with a Streamable HTTP endpoint the kit may
// POST, GET and DELETE directly.
type httpEndpoint interface {
	endpoint(ctx context.Context) (url string, hc *http.Client, err error)
}

func (t *inProcessTarget) rawConnection(ctx context.Context) (mcp.Connection, error) {
	clientEnd, serverEnd := net.Pipe()
	go func() {
		_ = t.srv.Run(t.ctx, &mcp.IOTransport{Reader: serverEnd, Writer: serverEnd, MaxLineLength: inProcessMaxMessage})
	}()
	return (&mcp.IOTransport{Reader: clientEnd, Writer: clientEnd, MaxLineLength: inProcessMaxMessage}).Connect(ctx)
}

func (t *stdioTarget) rawConnection(ctx context.Context) (mcp.Connection, error) {
	return t.newTransport(t.command()).Connect(ctx)
}

func (t *inProcessTarget) endpoint(context.Context) (string, *http.Client, error) {
	t.httpOnce.Do(func() {
		t.httpSrv = httptest.NewServer(t.srv.HTTPHandler(t.httpOptions(nil)))
	})
	t.modernOnce.Do(func() {
		var h http.Handler = t.srv.HTTPHandler(t.httpOptions(nil))
		if b := t.breakage; b != nil && b.handler != nil {
			h = b.handler(h)
		}
		t.modernSrv = httptest.NewServer(h)
	})
	return t.modernSrv.URL + server.MCPPath, http.DefaultClient, nil
}

func (t *httpTarget) endpoint(context.Context) (string, *http.Client, error) {
	return t.cfg.ServerURL, &http.Client{Transport: headerTransport{headers: t.cfg.Headers, base: http.DefaultTransport}}, nil
}

// rawCall sends one request on conn and reads until its response.
func rawCall(ctx context.Context, conn mcp.Connection, id int64, method string, params any) (*jsonrpc.Response, error) {
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("marshal %s params: %w", method, err)
	}
	rid, err := jsonrpc.MakeID(float64(id))
	if err != nil {
		return nil, fmt.Errorf("request id: %w", err)
	}
	if err := conn.Write(ctx, &jsonrpc.Request{ID: rid, Method: method, Params: raw}); err != nil {
		return nil, fmt.Errorf("send %s: %w", method, err)
	}
	for {
		msg, err := conn.Read(ctx)
		if err != nil {
			return nil, fmt.Errorf("read the answer to %s: %w", method, err)
		}
		if resp, ok := msg.(*jsonrpc.Response); ok && resp.ID == rid {
			return resp, nil
		}
	}
}

// modernMeta is the _meta of a 2026-07-28 request at version v.
func modernMeta(v string) map[string]any {
	return map[string]any{
		"io.modelcontextprotocol/protocolVersion":    v,
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "sandboxkit-conformance", "version": Version},
	}
}
