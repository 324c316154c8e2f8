package sandbox

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/sandboxkit/sandboxkit/internal/envdapi"
)

// DefaultUser is the sandbox user that in-sandbox calls run as when
// [EnvdOptions.User] is empty, as in the E2B SDKs.
const DefaultUser = "user"

// DefaultKeepaliveInterval is the keepalive interval asked of the daemon on
// streaming calls when [EnvdOptions.KeepaliveInterval] is zero.
const DefaultKeepaliveInterval = 50 * time.Second

// EnvdOptions configures an [Envd] client. The zero value (or nil) gives defaults.
type EnvdOptions struct {
	// User is the sandbox user that processes run as and that file paths
	// resolve against ("~" and relative paths mean that user's home).
	// Empty means [DefaultUser].
	User string
	// KeepaliveInterval is sent to the daemon on streaming calls as the
	// interval of its keepalive events, in whole seconds. Zero means
	// [DefaultKeepaliveInterval].
	KeepaliveInterval time.Duration
}

// Envd is a client of one sandbox's in-sandbox daemon (envd): its process
// and filesystem Connect services and its /files endpoint. It is built by
// [Sandbox.Envd], uses the platform's HTTP client, and is safe for
// concurrent use. It holds no goroutines and needs no closing; only the
// [Process] handles it returns own goroutines.
//
// The daemon is reached at "https://49983-<id>.<domain>" by default; when
// the provider has a SandboxURL, every request goes to that URL and names
// the sandbox in the E2b-Sandbox-Id and E2b-Sandbox-Port headers. Every
// request carries the sandbox's access token (when it has one) in
// X-Access-Token; Connect calls select the user with
// "Authorization: Basic base64(user:)", /files calls with the username
// query parameter.
//
// Unary calls are bounded by the platform's request timeout
// ([Options.RequestTimeout]) as well as by ctx; streams and /files
// transfers, which may legitimately run long, only by ctx ([Envd.Run] adds
// its command timeout).
//
// Every failure is an [*Error] whose Op is the daemon route (one of the
// OpProcess*, OpFilesystem* and OpFiles* constants) and whose text never
// holds the daemon's message, a URL, a host name or a token. Connect error
// codes map to categories (not_found, invalid_argument, unauthenticated
// and permission_denied to the same names; already_exists,
// failed_precondition and aborted to conflict; resource_exhausted to
// rate_limited, or to provider_error with Code "insufficient_storage" when
// the disk is full; unavailable and canceled to unavailable;
// deadline_exceeded to timeout; anything else to provider_error), with
// the Connect code kept in Error.Code. /files statuses map through
// [CategoryForStatus].
type Envd struct {
	httpClient     *http.Client
	requestTimeout time.Duration
	maxMessage     int // bound on one Connect message read whole (Options.MaxResponseBytes)
	baseURL        string
	user           string
	// token is the sandbox's envd access token ("" for a sandbox created
	// without secure); only the /files URL signatures read it.
	token string
	// headers go on every request; rpcHeaders only on Connect calls.
	// Neither is modified after construction.
	headers    http.Header
	rpcHeaders http.Header
	keepalive  string

	start      *connect.Client[envdapi.StartRequest, envdapi.StartResponse]
	connect    *connect.Client[envdapi.ConnectRequest, envdapi.ConnectResponse]
	list       *connect.Client[envdapi.ListRequest, envdapi.ListResponse]
	sendInput  *connect.Client[envdapi.SendInputRequest, envdapi.SendInputResponse]
	sendSignal *connect.Client[envdapi.SendSignalRequest, envdapi.SendSignalResponse]
	closeStdin *connect.Client[envdapi.CloseStdinRequest, envdapi.CloseStdinResponse]

	stat    *connect.Client[envdapi.StatRequest, envdapi.StatResponse]
	listDir *connect.Client[envdapi.ListDirRequest, envdapi.ListDirResponse]
	makeDir *connect.Client[envdapi.MakeDirRequest, envdapi.MakeDirResponse]
	remove  *connect.Client[envdapi.RemoveRequest, envdapi.RemoveResponse]
	move    *connect.Client[envdapi.MoveRequest, envdapi.MoveResponse]
}

// Envd returns a client for the sandbox's in-sandbox daemon. Building one
// makes no network call; the daemon's address is fixed from the handle's
// current domain (or the provider's SandboxURL) at this point. Keep and
// reuse the client rather than building one per call.
func (s *Sandbox) Envd(opts *EnvdOptions) *Envd {
	if opts == nil {
		opts = &EnvdOptions{}
	}
	user := opts.User
	if user == "" {
		user = DefaultUser
	}
	keepalive := opts.KeepaliveInterval
	if keepalive <= 0 {
		keepalive = DefaultKeepaliveInterval
	}
	e := &Envd{
		httpClient:     s.platform.httpClient,
		requestTimeout: s.platform.requestTimeout,
		maxMessage:     s.platform.maxResponse,
		user:           user,
		token:          s.envdAccessToken,
		headers:        http.Header{},
		rpcHeaders:     http.Header{},
		keepalive:      strconv.FormatInt(int64((keepalive+time.Second-1)/time.Second), 10),
	}
	e.headers.Set("User-Agent", s.platform.userAgent)
	if s.envdAccessToken != "" {
		e.headers.Set(envdapi.AccessTokenHeader, s.envdAccessToken)
	}
	if u := s.ep.provider.SandboxURL; u != "" {
		e.baseURL = strings.TrimRight(u, "/")
		e.headers.Set(envdapi.SandboxIDHeader, s.id.ID)
		e.headers.Set(envdapi.SandboxPortHeader, strconv.Itoa(EnvdPort))
	} else {
		s.mu.Lock()
		domain := s.domain
		s.mu.Unlock()
		if domain == "" {
			domain = DefaultDomain
		}
		e.baseURL = "https://" + strconv.Itoa(EnvdPort) + "-" + s.id.ID + "." + domain
	}
	e.rpcHeaders.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(user+":")))

	o := []connect.ClientOption{
		connect.WithCodec(envdCodec{}),
		connect.WithInterceptors(envdInterceptor{e}),
		connect.WithReadMaxBytes(e.maxMessage),
	}
	hc, base := probedClient(e.httpClient, e.maxMessage), e.baseURL
	e.start = connect.NewClient[envdapi.StartRequest, envdapi.StartResponse](hc, base+envdapi.ProcessStartProcedure, o...)
	e.connect = connect.NewClient[envdapi.ConnectRequest, envdapi.ConnectResponse](hc, base+envdapi.ProcessConnectProcedure, o...)
	e.list = connect.NewClient[envdapi.ListRequest, envdapi.ListResponse](hc, base+envdapi.ProcessListProcedure, o...)
	e.sendInput = connect.NewClient[envdapi.SendInputRequest, envdapi.SendInputResponse](hc, base+envdapi.ProcessSendInputProcedure, o...)
	e.sendSignal = connect.NewClient[envdapi.SendSignalRequest, envdapi.SendSignalResponse](hc, base+envdapi.ProcessSendSignalProcedure, o...)
	e.closeStdin = connect.NewClient[envdapi.CloseStdinRequest, envdapi.CloseStdinResponse](hc, base+envdapi.ProcessCloseStdinProcedure, o...)
	e.stat = connect.NewClient[envdapi.StatRequest, envdapi.StatResponse](hc, base+envdapi.FilesystemStatProcedure, o...)
	e.listDir = connect.NewClient[envdapi.ListDirRequest, envdapi.ListDirResponse](hc, base+envdapi.FilesystemListDirProcedure, o...)
	e.makeDir = connect.NewClient[envdapi.MakeDirRequest, envdapi.MakeDirResponse](hc, base+envdapi.FilesystemMakeDirProcedure, o...)
	e.remove = connect.NewClient[envdapi.RemoveRequest, envdapi.RemoveResponse](hc, base+envdapi.FilesystemRemoveProcedure, o...)
	e.move = connect.NewClient[envdapi.MoveRequest, envdapi.MoveResponse](hc, base+envdapi.FilesystemMoveProcedure, o...)
	return e
}

// User returns the sandbox user the client acts as.
func (e *Envd) User() string { return e.user }

// envdInterceptor puts the client's headers on every Connect call, unary
// and streaming alike (a unary-only interceptor never sees streams).
type envdInterceptor struct{ e *Envd }

// WrapUnary sets the headers on a unary request.
func (i envdInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		i.e.setHeaders(req.Header(), true)
		return next(ctx, req)
	}
}

// WrapStreamingClient sets the headers, and the keepalive interval, on a
// stream's request; the conn next returns has not sent them yet.
func (i envdInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, spec)
		h := conn.RequestHeader()
		i.e.setHeaders(h, true)
		h.Set(envdapi.KeepaliveHeader, i.e.keepalive)
		return conn
	}
}

// WrapStreamingHandler leaves handlers alone: this is a client interceptor.
func (i envdInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

// setHeaders copies the client's fixed headers into h.
func (e *Envd) setHeaders(h http.Header, rpc bool) {
	for k, v := range e.headers {
		h[k] = v
	}
	if rpc {
		for k, v := range e.rpcHeaders {
			h[k] = v
		}
	}
}

// unaryCall runs one unary Connect call bounded by the platform's request
// timeout and maps any failure to an *Error for op.
func unaryCall[Req, Res any](ctx context.Context, e *Envd, op string, c *connect.Client[Req, Res], req *Req) (*Res, error) {
	ctx, cancel := context.WithTimeout(withProbe(ctx), e.requestTimeout)
	defer cancel()
	res, err := c.CallUnary(ctx, connect.NewRequest(req))
	if err != nil {
		return nil, rpcError(ctx, op, err)
	}
	return res.Msg, nil
}

// rpcError classifies a failed Connect call. ctx is the call's context: when
// it is done, its cause decides (timeout or cancellation). The daemon's
// message is consulted only to tell a full disk from a rate limit and is
// never kept.
func rpcError(ctx context.Context, op string, err error) *Error {
	return probedError(ctx, classifyRPCError(ctx, op, err))
}

func classifyRPCError(ctx context.Context, op string, err error) *Error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return transportError(op, ctxErr)
	}
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return transportError(op, err)
	}
	e := &Error{Op: op, Category: categoryForCode(ce.Code()), Code: ce.Code().String()}
	switch ce.Code() {
	case connect.CodeCanceled:
		e.cause = context.Canceled
	case connect.CodeDeadlineExceeded:
		e.cause = context.DeadlineExceeded
	case connect.CodeResourceExhausted:
		if isDiskFull(ce.Message()) {
			e.Category, e.Code = ProviderError, "insufficient_storage"
		}
	}
	return e
}

// categoryForCode maps a Connect error code to a category.
func categoryForCode(code connect.Code) Category {
	switch code {
	case connect.CodeNotFound:
		return NotFound
	case connect.CodeInvalidArgument:
		return InvalidArgument
	case connect.CodeUnauthenticated:
		return Unauthenticated
	case connect.CodePermissionDenied:
		return PermissionDenied
	case connect.CodeAlreadyExists, connect.CodeFailedPrecondition, connect.CodeAborted:
		return Conflict
	case connect.CodeResourceExhausted:
		return RateLimited
	case connect.CodeUnavailable, connect.CodeCanceled:
		return Unavailable
	case connect.CodeDeadlineExceeded:
		return Timeout
	default:
		return ProviderError
	}
}

// isDiskFull reports whether a resource_exhausted message is about disk
// space rather than a rate or quota of requests.
func isDiskFull(msg string) bool {
	m := strings.ToLower(msg)
	for _, s := range []string{"disk", "no space", "storage", "enospc"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// envdCodec is [envdapi.Codec] with a fast path for the one message that
// carries bulk data: a process output event. encoding/json validates a
// whole message before decoding it and then unquotes the base64 text
// into a temporary buffer; for {"event":{"data":{"stdout":"<base64>"}}}
// (or stderr) the base64 is decoded straight from the frame instead.
// Anything else, or any surprise in the frame, takes the general path.
type envdCodec struct{ envdapi.Codec }

var (
	dataPrefix = []byte(`{"event":{"data":{"`)
	dataSuffix = []byte(`"}}}`)
)

// Unmarshal decodes data into v, taking the fast path for output events.
func (c envdCodec) Unmarshal(data []byte, v any) error {
	var ev *envdapi.ProcessEvent
	switch m := v.(type) {
	case *envdapi.StartResponse:
		ev = &m.Event
	case *envdapi.ConnectResponse:
		ev = &m.Event
	}
	if ev != nil {
		if d, ok := decodeDataEvent(data); ok {
			*ev = envdapi.ProcessEvent{Data: d}
			return nil
		}
	}
	return c.Codec.Unmarshal(data, v)
}

// decodeDataEvent decodes an output event in its canonical compact form.
func decodeDataEvent(data []byte) (*envdapi.DataEvent, bool) {
	rest, ok := bytes.CutPrefix(data, dataPrefix)
	if !ok {
		return nil, false
	}
	rest, ok = bytes.CutSuffix(rest, dataSuffix)
	if !ok {
		return nil, false
	}
	var stream string
	for _, s := range []string{"stdout", "stderr"} {
		if r, ok := bytes.CutPrefix(rest, []byte(s+`":"`)); ok {
			stream, rest = s, r
			break
		}
	}
	if stream == "" || bytes.ContainsAny(rest, "\"\\\r\n") {
		return nil, false
	}
	out := make([]byte, base64.StdEncoding.DecodedLen(len(rest)))
	n, err := base64.StdEncoding.Decode(out, rest)
	if err != nil {
		return nil, false
	}
	if stream == "stdout" {
		return &envdapi.DataEvent{Stdout: out[:n]}, true
	}
	return &envdapi.DataEvent{Stderr: out[:n]}, true
}
