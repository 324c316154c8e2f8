// Package server is sandboxkit's reference MCP server: the sandbox tools of
// the tool contract (conformance/contract/tools.md in this
// repository), built on the official Go SDK
// (github.com/modelcontextprotocol/go-sdk) and the sandbox SDK.
//
// Each tool has one exported constructor named after it ([GetSandbox],
// [CreateSandbox], ...), and [AllTools] is the single list that registration,
// documentation and tests read. A [Tool] is an [mcp.Tool] with a hand-written
// input schema plus a handler; it is registered through the raw
// [mcp.Server.AddTool], and its arguments are validated here, field by field
// (VAL-1..7), so that an invalid value is never echoed back and never reaches
// the platform.
//
// Every successful result carries structuredContent and the same JSON as one
// text block (TOOLS-3; an inline download's text leaves out its base64,
// which travels once). Every failure is a tool error (isError) whose one
// text block is {"error": {"category", "http_status", "code", "field",
// "recovery"}} and which carries no structuredContent (ERR-1, ERR-2): the
// official clients validate any structuredContent against the tool's
// outputSchema, which describes only the success shape (TOOLS-5). A
// last-line middleware turns any stray Go error or panic into an internal
// tool error and scrubs known secrets from every result.
//
// State lives per MCP session (keyed by *mcp.ServerSession): the default
// sandbox, the owned sandboxes with their renewal policies, and the
// background commands. When a session ends (stdio EOF, HTTP DELETE, HTTP idle
// timeout, or [Server.Shutdown]) every owned sandbox is destroyed and nothing
// else is (SESSION-1).
//
// Nothing is lost to a misbehaving provider. Every provider call is bounded
// (the platform's request timeout, [Limits.FileTimeout], a command's own
// timeout), and a tool call's requests share one deadline, the platform's
// request timeout, outside the steps with a bound of their own (budget.go),
// so a provider that hangs or drips gives a timeout tool error within it. A
// close-time destroy that fails is retried with backoff for
// [Limits.DestroyRetryFor]; every create carries a [CreateTagKey] metadata
// value, and when its answer is lost the sandbox it may have made is found
// and destroyed; whatever still cannot be destroyed is logged at error level
// with its ID and listed by [Server.Unresolved], and [Server.Shutdown]
// reports it.
//
// Nothing is lost to a server that dies without cleaning up either. Every
// sandbox carries its owner in platform metadata ([InstanceTagKey],
// [BootTagKey], [SessionTagKey]) and its ID is logged at create and destroy;
// a server started again under the same [Deps.Instance] destroys what its
// previous life owned ([Server.SweepPrevious], [SweepOrphans]); and with
// [Deps.OwnerLease] the platform is never told a lifetime beyond the lease,
// which the server renews while the owning session lives (docs/deploy.md).
//
// Over HTTP, [HTTPOptions] caps live sessions (in all and per client, the
// idle longest evicted first), bounds request bodies by method and the
// bytes held in flight across the server, and cuts off clients that send
// or read too slowly; [Server.HTTPServer] adds the connection-level
// bounds. Both transports check every message strictly before it is
// handled (no duplicate member names, no data after the value, integer or
// string ids): stdio answers a bad line with a JSON-RPC error and goes on.
//
// The same [Server] serves stdio ([Server.RunStdio]) and Streamable HTTP
// ([Server.HTTPHandler]) with one *mcp.Server, so tools/list and results are
// identical over both (TOOLS-2).
//
// Modern (2026-07-28) requests over HTTP pass the same front door
// (authentication, Host/Origin checks, body caps, in-flight budget) and
// then take one of two go-sdk entry points of that same *mcp.Server. The
// plain case, one tools/call or tools/list whose headers go-sdk would
// accept, goes to one long-lived ServerSession over an in-process
// connection (era_http.go), as on stdio, where one session serves every
// modern request: go-sdk's stateless handler would build a session per
// request and decode the body about ten times, which made a modern call
// cost 1.6 times a legacy one in CPU (BenchmarkEras). That session keeps
// no request's state (it starts initialized with neutral parameters, and
// each request's version, capabilities and log level come from its own
// _meta), mints no session ID, remaps each request's JSON-RPC ID to one of
// its own and back, and cancels a call whose client closed the response
// stream. Every other modern request (other methods, batches,
// notifications, any header mismatch or unknown version) goes to the
// stateless handler, which answers it; a test compares the two paths'
// answers byte for byte.
package server
