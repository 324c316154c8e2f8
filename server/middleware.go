package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const methodCallTool = "tools/call"

// sessionMiddleware gives every SDK session its state on its first request
// and arranges for the state to be cleaned up when the session ends. The SDK
// has no session-closed hook; the registry waits on ss.Wait().
func (s *Server) sessionMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		// A modern request has no session: it never touches the registry.
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil && !modernRequest(req) {
			sess := s.reg.attach(ss)
			if ex := req.GetExtra(); ex != nil && ex.Header != nil {
				if p := ex.Header.Get(principalHeader); p != "" {
					sess.claim(p) // the SDK keeps the session to this principal
				}
			}
		}
		return next(ctx, method, req)
	}
}

// logMiddleware writes one structured line per request: method, tool,
// duration and, for failures, the category. It never logs arguments,
// results, provider messages, URLs or tokens.
func (s *Server) logMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		start := s.deps.Now()
		res, err := next(ctx, method, req)
		attrs := []slog.Attr{slog.String("method", method), slog.Duration("duration", s.deps.Now().Sub(start))}
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
			if sess, ok := s.reg.lookup(ss); ok {
				attrs = append(attrs, slog.Uint64("session", sess.seq))
			}
		}
		level := slog.LevelDebug
		if method == methodCallTool {
			level = slog.LevelInfo
			tool := "unknown"
			if ct, ok := req.(*mcp.CallToolRequest); ok && ct.Params != nil && s.names[ct.Params.Name] {
				tool = ct.Params.Name
			}
			attrs = append(attrs, slog.String("tool", tool))
		}
		var je *jsonrpc.Error
		switch {
		case errors.As(err, &je):
			attrs = append(attrs, slog.Int("rpc_error", int(je.Code)))
		case err != nil:
			attrs = append(attrs, slog.String("rpc_error", "other"))
		}
		if ctr, ok := res.(*mcp.CallToolResult); ok && ctr != nil && ctr.IsError {
			category := "internal"
			var te *ToolError
			if errors.As(ctr.GetError(), &te) {
				category = string(te.Category)
			}
			attrs = append(attrs, slog.String("category", category))
		}
		s.deps.Logger.LogAttrs(ctx, level, "mcp request", attrs...)
		return res, err
	}
}

// lastLineMiddleware is the last line of defence for tools/call: a panic or
// a stray Go error becomes an internal tool error (never a protocol error
// carrying its text), while the SDK's -32602 unknown-tool error passes
// through; and every known secret is scrubbed from whatever goes out.
func (s *Server) lastLineMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (res mcp.Result, err error) {
		if method != methodCallTool {
			return next(ctx, method, req)
		}
		defer func() {
			if r := recover(); r != nil {
				s.deps.Logger.Error("tool call panicked", "method", method)
				res, err = errorResult(internalError()), nil
			}
			var je *jsonrpc.Error
			switch {
			case err != nil && errors.As(err, &je) && je.Code == jsonrpc.CodeInvalidParams:
				msg := s.scrubString(je.Message)
				if msg != je.Message {
					err = &jsonrpc.Error{Code: je.Code, Message: msg}
				}
			case err != nil:
				s.deps.Logger.Error("tool call failed with a protocol error", "method", method)
				res, err = errorResult(internalError()), nil
			case isNilResult(res):
				res = errorResult(internalError())
			}
			if ctr, ok := res.(*mcp.CallToolResult); ok && ctr != nil {
				s.scrubResult(ctr)
			}
		}()
		return next(ctx, method, req)
	}
}

// isNilResult reports whether res is nil or a nil *mcp.CallToolResult.
func isNilResult(res mcp.Result) bool {
	if res == nil {
		return true
	}
	ctr, ok := res.(*mcp.CallToolResult)
	return ok && ctr == nil
}

// redacted replaces a secret found in a result.
const redacted = "[REDACTED]"

// minSecretLen keeps very short "secrets" from mangling every result.
const minSecretLen = 6

// secrets returns the values to scrub.
func (s *Server) secrets() []string {
	out := make([]string, 0, len(s.deps.Secrets))
	for _, v := range s.deps.Secrets {
		if len(v) >= minSecretLen {
			out = append(out, v)
		}
	}
	return out
}

// scrubString replaces every known secret in text.
func (s *Server) scrubString(text string) string {
	for _, sec := range s.secrets() {
		if strings.Contains(text, sec) {
			text = strings.ReplaceAll(text, sec, redacted)
		}
	}
	return text
}

// scrubResult replaces every known secret in a result's text blocks and
// structured content, both raw and as JSON-escaped.
func (s *Server) scrubResult(res *mcp.CallToolResult) {
	secrets := s.secrets()
	if len(secrets) == 0 {
		return
	}
	var mirror *string // the one text block, scrubbed, when a secret was in it
	for i, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			if t := s.scrubString(c.Text); t != c.Text {
				res.Content[i] = &mcp.TextContent{Text: t, Meta: c.Meta, Annotations: c.Annotations}
				mirror = &t
			}
		}
	}
	if res.StructuredContent == nil {
		return
	}
	if _, ok := res.StructuredContent.(textMirrored); ok && len(res.Content) == 1 {
		// Its JSON is the one text block (see result), scrubbed above:
		// nothing to encode again unless a secret was found.
		if mirror != nil {
			res.StructuredContent = json.RawMessage(*mirror)
		}
		return
	}
	data, ok := res.StructuredContent.(json.RawMessage)
	if !ok {
		var err error
		if data, err = json.Marshal(res.StructuredContent); err != nil {
			res.StructuredContent = nil
			return
		}
	}
	changed := false
	for _, sec := range secrets {
		forms := [][]byte{[]byte(sec)}
		if esc, err := json.Marshal(sec); err == nil {
			forms = append(forms, esc[1:len(esc)-1])
		}
		for _, f := range forms {
			if bytes.Contains(data, f) {
				data = bytes.ReplaceAll(data, f, []byte(redacted))
				changed = true
			}
		}
	}
	if changed || !ok {
		res.StructuredContent = json.RawMessage(data)
	}
}

// sdkLogHandler passes the SDK's own warnings and errors to our logger with
// their message only: the SDK's attributes can hold session IDs and
// transport error texts.
type sdkLogHandler struct{ next slog.Handler }

func (h sdkLogHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && h.next.Enabled(ctx, l)
}

func (h sdkLogHandler) Handle(ctx context.Context, r slog.Record) error {
	msg := r.Message
	if i := strings.IndexAny(msg, ":\"%"); i >= 0 {
		msg = msg[:i] // keep the static head of a formatted message
	}
	return h.next.Handle(ctx, slog.NewRecord(r.Time, r.Level, "mcp sdk: "+msg, 0))
}

func (h sdkLogHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h sdkLogHandler) WithGroup(string) slog.Handler      { return h }
