package server

import (
	"context"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// answeringTransport wraps the transport of a connection that Run serves,
// counting the calls read on it and not yet answered, so that Run can let
// the calls a cancellation stopped write their answers before it closes
// the connection (SESSION-1). The SDK writes a call's answer after its
// handler returns; closing the session first drops it.
type answeringTransport struct {
	mcp.Transport
	calls *openCalls
}

// Connect implements mcp.Transport.
func (t *answeringTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	return &answeringConn{Connection: c, calls: t.calls}, nil
}

// answeringConn is a connection whose calls are counted until answered.
type answeringConn struct {
	mcp.Connection
	calls *openCalls
}

// Read implements mcp.Connection.
func (c *answeringConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if req, ok := msg.(*jsonrpc.Request); ok && err == nil && req.IsCall() {
		c.calls.read(req.ID)
	}
	return msg, err // unwrapped: the SDK tells end of input by the transport's own error
}

// Write implements mcp.Connection.
func (c *answeringConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.calls.answered(resp.ID)
	}
	return err // unwrapped, as Read's
}

// openCalls is the set of calls read and not yet answered.
type openCalls struct {
	mu      sync.Mutex
	pending map[string]int // idKey: how many calls under that ID
	idle    chan struct{}  // closed when pending empties; nil while empty
}

func (u *openCalls) read(id jsonrpc.ID) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.pending == nil {
		u.pending = map[string]int{}
	}
	if len(u.pending) == 0 {
		u.idle = make(chan struct{})
	}
	u.pending[idKey(id)]++
}

func (u *openCalls) answered(id jsonrpc.ID) {
	u.mu.Lock()
	defer u.mu.Unlock()
	k := idKey(id)
	if u.pending[k] == 0 {
		return // an answer to no counted call (id null, or already answered)
	}
	if u.pending[k]--; u.pending[k] == 0 {
		delete(u.pending, k)
	}
	if len(u.pending) == 0 {
		close(u.idle)
		u.idle = nil
	}
}

// wait returns once every call read has been answered, or when ctx ends.
func (u *openCalls) wait(ctx context.Context) {
	u.mu.Lock()
	idle := u.idle
	u.mu.Unlock()
	if idle == nil {
		return
	}
	select {
	case <-idle:
	case <-ctx.Done():
	}
}
