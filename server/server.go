package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxkit/sandboxkit/internal/toolset"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// ProtocolVersions returns the MCP protocol versions the server negotiates,
// newest first: the ones that have sessions (TOOLS-4). A client offering a
// newer, sessionless version falls back to one of these.
func ProtocolVersions() []string { return []string{"2025-11-25", "2025-06-18", "2025-03-26"} }

// Options configures a [Server]. A nil *Options selects every default.
type Options struct {
	// Name is the implementation name sent to clients. Default "sandboxkit".
	Name string
	// Version is the implementation version. Default "dev".
	Version string
	// Instructions are sent to clients at initialization. Default
	// [DefaultInstructions].
	Instructions string
}

// DefaultInstructions tell a model how sandboxes live in either era: leases
// for 2026-07-28 requests, defaults and ownership for 2025 sessions. They
// hold for both eras, since server/discover and initialize send the same
// text.
const DefaultInstructions = `Tools for cloud code sandboxes (E2B and E2B-compatible providers).
create_sandbox returns a sandbox_id; pass it to the other tools.
2026-07-28 requests have no session and no default sandbox: every tool but create_sandbox
and list_sandboxes needs sandbox_id, and nothing is created implicitly. A sandbox they create
has a lease: it lives for its timeout (create_sandbox's timeout, 300 s by default) from its
creation and from each execution, file, background or binary call on it, and ends only with
kill_sandbox or when the lease runs out. Only the caller that created it can reach it.
In a 2025 session, the session has at most one default sandbox: create_sandbox sets it, and
execution, file, background and binary tools create one when none exists. Tools without
sandbox_id use the default. Sandboxes the session creates are destroyed when it ends.
Sandboxes named by ID that were not created by the caller are never renewed or destroyed.`

// Server is the reference MCP server: one *mcp.Server with the contract's
// tools, the per-session state and its cleanup. It serves stdio and
// Streamable HTTP with the same *mcp.Server (TOOLS-2). It is safe for
// concurrent use.
type Server struct {
	deps  *Deps
	mcp   *mcp.Server
	reg   *registry
	tools []Tool
	names map[string]bool

	sdkLogger *slog.Logger // the SDK's own lines, message only

	// stash holds large tools/call arguments in flight over HTTP.
	stash argStash
	// holds are the HTTP requests' reservations of the in-flight budget
	// for their responses.
	holds holdBook
	// httpCalls counts HTTP requests in flight, which shutdown lets finish
	// before it closes the sessions.
	httpCalls tracker

	shutdownOnce sync.Once
}

// New builds a Server with every tool of [AllTools] registered.
func New(deps *Deps, opts *Options) (*Server, error) {
	if deps == nil || deps.Platform == nil {
		return nil, errors.New("server: Deps.Platform is required")
	}
	if opts == nil {
		opts = &Options{}
	}
	d := deps.withDefaults()
	if d.Instance == "" {
		d.Instance = "anon-" + randomHex(6)
	}
	if err := ValidateInstance(d.Instance); err != nil {
		return nil, err
	}
	if d.OwnerLease != 0 && (d.OwnerLease < MinOwnerLease || d.OwnerLease > sandbox.MaxTimeout) {
		return nil, fmt.Errorf("server: owner lease %v: want %v to %v, or 0 for none", d.OwnerLease, MinOwnerLease, sandbox.MaxTimeout)
	}
	d.own = newOwnership(d.Instance, randomHex(6), d.OwnerLease, d.Logger)
	d.leases = newLeaseBook()
	name, version, instructions := opts.Name, opts.Version, opts.Instructions
	if name == "" {
		name = "sandboxkit"
	}
	if version == "" {
		version = "dev"
	}
	if instructions == "" {
		instructions = DefaultInstructions
	}
	s := &Server{deps: d, reg: newRegistry(d), names: map[string]bool{}, sdkLogger: slog.New(sdkLogHandler{next: d.Logger.Handler()})}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: name, Version: version}, &mcp.ServerOptions{
		Instructions: instructions,
		Logger:       s.sdkLogger,
		Capabilities: serverCapabilities(),
		// TOOLS-4: initialize still negotiates only the 2025 versions (the
		// SDK never negotiates a sessionless one there); server/discover
		// lists them all, and -32022 answers any other.
		SupportedProtocolVersions: SupportedProtocolVersions(),
		SetCacheable:              setCacheable,
	})
	// The first listed runs outermost: track the session, log the call with
	// its final outcome, then the last line of defence around the handler.
	s.mcp.AddReceivingMiddleware(s.sessionMiddleware, s.logMiddleware, s.lastLineMiddleware)
	s.tools = AllTools(d)
	for _, t := range s.tools {
		if s.names[t.Name()] {
			d.own.close()
			return nil, fmt.Errorf("server: duplicate tool %q", t.Name())
		}
		s.names[t.Name()] = true
		s.mcp.AddTool(wireDef(t.Def), s.toolHandler(t))
	}
	return s, nil
}

// wireDef is the definition the SDK serves: def with its input schema
// marshalled once. The SDK reads the input schema of the called tool on
// every 2026-07-28 HTTP request (for x-mcp-header annotations), marshalling
// it each time; marshalling a *jsonschema.Schema is costly, copying bytes
// is not. tools/list is the same bytes either way (the arguments are
// validated by [Tool.validate], not by the SDK).
func wireDef(def *mcp.Tool) *mcp.Tool {
	raw, err := json.Marshal(def.InputSchema)
	if err != nil {
		panic(fmt.Sprintf("server: tool %q: input schema: %v", def.Name, err)) // newTool checked it
	}
	wire := *def
	wire.InputSchema = json.RawMessage(raw)
	return &wire
}

// serverCapabilities are what server/discover and initialize declare, the
// same in both eras: tools, and the prompts and resources whose methods the
// SDK serves for every server (prompts/list, resources/list,
// resources/templates/list answer empty lists; prompts/get and
// resources/read, not found). A server that serves them must declare them
// (MCP 2026-07-28 server/prompts.mdx: "Servers that support prompts MUST
// declare the prompts capability in their DiscoverResult"; 2025-11-25
// server/prompts.mdx and server/resources.mdx: "during initialization").
// None of the lists ever changes, so no listChanged; nothing to subscribe
// to.
func serverCapabilities() *mcp.ServerCapabilities {
	return &mcp.ServerCapabilities{
		Tools:     &mcp.ToolCapabilities{},
		Prompts:   &mcp.PromptCapabilities{},
		Resources: &mcp.ResourceCapabilities{},
	}
}

// MCPServer returns the underlying *mcp.Server, for transports this package
// does not wrap (tests use it with mcp.NewInMemoryTransports).
func (s *Server) MCPServer() *mcp.Server { return s.mcp }

// Tools returns the registered tools, in registration order.
func (s *Server) Tools() []Tool { return append([]Tool(nil), s.tools...) }

// toolHandler adapts a Tool to the raw SDK handler: validate first (nothing
// else happens for an invalid call: VAL-7), then run with the session's
// state, and always answer with a result, never a Go error (ERR-1).
func (s *Server) toolHandler(t Tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		raw := req.Params.Arguments
		if tok, ok := stashToken(raw); ok {
			// The HTTP front end or the stdio transport kept these
			// arguments out of the SDK's copy of the request (see argStash).
			if raw, ok = s.stash.take(tok, sessionID(req)); !ok {
				return errorResult(invalidField(stashKey)), nil
			}
		}
		// Raw bytes that are not UTF-8 would be decoded as U+FFFD and
		// written as such: refuse them, naming the field (FILE-1, VAL-6).
		if field := invalidUTF8Member(raw); field != "" {
			return errorResult(invalidField(field)), nil
		}
		a, verr := t.validate(raw)
		if verr != nil {
			return errorResult(verr), nil
		}
		if req.Extra != nil && req.Extra.Header != nil {
			ctx = withHold(ctx, s.holds.lookup(req.Extra.Header.Get(holdHeader)))
		}
		if modernRequest(req) {
			return s.runModern(ctx, t, req, a), nil
		}
		if req.Session == nil {
			return errorResult(internalError()), nil
		}
		sess := s.reg.attach(req.Session)
		if sess.isClosed() {
			return errorResult(sessionClosedError()), nil
		}
		// The SDK ends the session (ss.Wait returns) only after its calls in
		// flight return, but it cancels them at once, with the read error as
		// the cause, when the connection dies. Treat that as the close, so
		// that a completion can never touch the session's state again
		// (TIMEOUT-5) and the destroys start now.
		stop := context.AfterFunc(ctx, func() {
			if connectionLost(ctx) {
				s.reg.end(sess)
			}
		})
		defer stop()
		if t.Name() == toolCreateSandbox {
			limit := s.deps.Limits.SandboxesPerSession
			release, ok := sess.reserveCreate(limit)
			if !ok {
				return errorResult(tooManySandboxes(limit)), nil
			}
			defer release()
		}
		ctx, cancel := sess.bind(ctx)
		defer cancel()
		out, err := s.handle(ctx, t, sess, a)
		if err != nil {
			return errorResult(toToolError(err)), nil
		}
		res, err := result(out, !knowsStructured(req))
		if err != nil {
			return errorResult(internalError()), nil
		}
		return res, nil
	}
}

// runModern runs a tool for a modern request: no session record, no
// default, nothing owned or destroyed at the request's end (MODERN-1,
// LEASE-3). The stand-in session lives only for this call, so nothing
// carries over to the next request on the same connection or process.
func (s *Server) runModern(ctx context.Context, t Tool, req *mcp.CallToolRequest, a args) *mcp.CallToolResult {
	sess := newSession(0)
	defer sess.cancel()
	sess.reg = s.reg // only for finding what a failed create left
	sess.modern = &modernCall{principal: principalOf(req)}
	out, err := s.handle(ctx, t, sess, a)
	if err != nil {
		return errorResult(toToolError(err))
	}
	res, err := result(out, false) // every modern client reads structuredContent
	if err != nil {
		return errorResult(internalError())
	}
	return res
}

// handle runs a tool's handler within the call's provider deadline: the
// platform's request timeout for all of the call's provider requests
// together, both eras alike (budget.go).
func (s *Server) handle(ctx context.Context, t Tool, sess *session, a args) (any, error) {
	ctx, cancel := withCallDeadline(ctx, s.deps.Platform.RequestTimeout())
	defer cancel()
	return t.handler(ctx, sess, a)
}

// knowsStructured reports whether a legacy session's protocol version has
// structuredContent (2025-06-18 and later): a 2025-03-26 client reads only
// the text block, which then carries the whole result (TOOLS-3).
func knowsStructured(req *mcp.CallToolRequest) bool {
	ip := req.Session.InitializeParams()
	return ip == nil || ip.ProtocolVersion >= "2025-06-18"
}

// listTTL is how long a client may cache the tool list and the discover
// result (TOOLS-6): they change only with a new server version.
const listTTL = time.Hour

// setCacheable gives the list and discover results of the modern era their
// caching hints (TOOLS-6): the same for every caller.
func setCacheable(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
	if modernRequest(req) {
		c.TTLMs = int(listTTL / time.Millisecond)
		c.CacheScope = "public"
	}
}

// toolCreateSandbox is the tool whose calls the per-session sandbox cap
// counts.
const toolCreateSandbox = toolset.CreateSandbox

// connectionLost reports whether ctx was cancelled because the connection
// failed (end of file, a read or write error) rather than by the client's
// cancellation or a deadline.
func connectionLost(ctx context.Context) bool {
	cause := context.Cause(ctx)
	return cause != nil && !errors.Is(cause, context.Canceled) && !errors.Is(cause, context.DeadlineExceeded)
}

// Shutdown ends every session: it destroys every owned sandbox (and nothing
// else), cancels the calls in flight and lets them answer (within ctx),
// closes the SDK sessions, and waits for the destroys to finish or
// ctx to end. Sessions that start afterwards are closed at once. It may be
// called more than once.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutdownOnce.Do(func() { s.deps.Logger.Info("server shutting down") })
	s.reg.beginShutdown()
	s.deps.own.close() // no lease renewal once sessions close
	// The calls in flight were cancelled with their sessions: let them
	// send their answers before the SDK sessions close, which would cut
	// their response streams and leave an empty 200.
	_ = s.httpCalls.wait(ctx)
	var closing tracker
	for ss := range s.mcp.Sessions() {
		closing.add()
		go func() {
			defer closing.done()
			_ = ss.Close()
		}()
	}
	err := s.reg.cleanups.wait(ctx)
	if err == nil {
		// Closing an SDK session waits for its calls in flight; those that
		// outlive ctx are abandoned, not waited for.
		err = closing.wait(ctx)
	}
	if err == nil {
		// Sessions that closed meanwhile may have started more destroys.
		err = s.reg.cleanups.wait(ctx)
	}
	if err != nil {
		// Give up: every destroy still waiting to retry reports itself
		// unresolved; those in flight are named here.
		pending := s.reg.pendingCleanups()
		s.reg.abandon()
		for _, p := range pending {
			s.deps.Logger.Error("shutdown ended before a sandbox was destroyed", "sandbox", p)
		}
		return fmt.Errorf("server: shutdown: %w (%d sandbox destroys unfinished)", err, len(pending))
	}
	if n := s.UnresolvedCount(); n > 0 {
		return fmt.Errorf("server: shutdown: %d sandboxes could not be destroyed (listed in the log)", n)
	}
	return nil
}

// Run serves one connection on t (stdio, in-memory, ...) until it ends or
// ctx is done, then finishes the session's cleanup before returning.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	calls := &openCalls{}
	ss, err := s.mcp.Connect(ctx, &answeringTransport{Transport: t, calls: calls}, nil)
	if err != nil {
		return fmt.Errorf("server: connect: %w", err)
	}
	sess := s.reg.attach(ss)
	waitErr := make(chan error, 1)
	go func() { waitErr <- ss.Wait() }()
	select {
	case err = <-waitErr:
	case <-ctx.Done():
		s.reg.end(sess) // cancels the session's calls in flight
		// SESSION-1: the cancelled calls are answered before the
		// connection closes, within the time a provider call may take.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.deps.Limits.DestroyTimeout)
		calls.wait(actx)
		cancel()
		_ = ss.Close()
		err = <-waitErr
	}
	s.reg.end(sess)
	l := s.deps.Limits
	cleanupCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), max(l.DestroyRetryFor, 0)+l.DestroyTimeout+l.DestroyTimeout/2)
	defer cancel()
	if cerr := s.reg.destroys.wait(cleanupCtx); cerr != nil { // create checks end with Shutdown
		s.deps.Logger.Warn("cleanup did not finish", "error", cerr.Error())
	}
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// RunStdio serves one session on stdin and stdout until stdin reaches EOF
// or ctx is done, and destroys the session's sandboxes before returning.
// A line that is not a valid JSON-RPC message is answered with a JSON-RPC
// error and skipped; the session goes on. Requests read before end of
// input are answered before the cleanup runs.
func (s *Server) RunStdio(ctx context.Context) error {
	return s.RunLines(ctx, os.Stdin, os.Stdout)
}

// RunLines serves one session on r and w exactly as RunStdio serves it on
// stdin and stdout: newline-delimited messages, each checked strictly. It
// lets a caller (the conformance kit) serve the stdio transport in
// process, over a pipe.
func (s *Server) RunLines(ctx context.Context, r io.Reader, w io.Writer) error {
	return s.Run(ctx, &lineTransport{r: r, w: w, maxLine: maxMessageBytes(s.deps.Limits), stash: &s.stash})
}

// maxMessageBytes is the largest JSON-RPC message accepted: room for an
// upload of Limits.TransferBytes in base64, plus the envelope.
func maxMessageBytes(l Limits) int {
	return l.TransferBytes/3*4 + 4 + 1<<20
}
