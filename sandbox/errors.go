package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"syscall"
)

// Category is the fixed class of a failure. It is the only part of a provider
// failure that may be shown to a model or a user, together with the HTTP
// status, the platform's semantic error code and a static recovery hint.
type Category string

// The categories. No other value is ever produced.
const (
	InvalidArgument  Category = "invalid_argument"
	NotFound         Category = "not_found"
	Unauthenticated  Category = "unauthenticated"
	PermissionDenied Category = "permission_denied"
	Conflict         Category = "conflict"
	RateLimited      Category = "rate_limited"
	Timeout          Category = "timeout"
	Unavailable      Category = "unavailable"
	ProviderError    Category = "provider_error"
	Internal         Category = "internal"
)

// Categories lists every category in a stable order.
func Categories() []Category {
	return []Category{InvalidArgument, NotFound, Unauthenticated, PermissionDenied, Conflict,
		RateLimited, Timeout, Unavailable, ProviderError, Internal}
}

var recoveryHints = map[Category]string{
	InvalidArgument:  "Check the arguments against the tool's input schema and try again.",
	NotFound:         "The sandbox or path does not exist, has expired or was killed; create a new sandbox or check the ID or path.",
	Unauthenticated:  "The server's provider credentials were rejected; the operator must configure a valid API key.",
	PermissionDenied: "The configured account may not perform this operation.",
	Conflict:         "The sandbox is not in a state that allows this operation (for example paused or being killed); wait and retry, or use another sandbox.",
	RateLimited:      "The provider is limiting requests or the sandbox quota is reached; wait before retrying or kill unused sandboxes.",
	Timeout:          "The operation did not finish in time; retry, possibly with a longer timeout.",
	Unavailable:      "The provider or the sandbox could not be reached; retry later.",
	ProviderError:    "The provider failed to perform the operation; retry later.",
	Internal:         "An internal error occurred; retry, and report it if it persists.",
}

// Recovery returns the static recovery hint of a category.
func (c Category) Recovery() string {
	if h, ok := recoveryHints[c]; ok {
		return h
	}
	return recoveryHints[Internal]
}

// Codes the SDK itself gives a [ProviderError] whose answer it could not use.
const (
	// CodeMalformedResponse: a success answer that is not what the route
	// returns (not JSON, or JSON of the wrong shape).
	CodeMalformedResponse = "malformed_response"
	// CodeResponseTooLarge: a success answer past the SDK's bound on one
	// answer (32 MiB), refused unread beyond it.
	CodeResponseTooLarge = "response_too_large"
	// CodeNotSent: no connection could be made (refused, no route, name
	// not found), so the request never reached the provider.
	CodeNotSent = "not_sent"
)

// Error is the one error type of the SDK. Its text names the operation, the
// category, the HTTP status and the platform's semantic error code, and
// nothing else: never the platform's message, a URL, a credential or a token.
type Error struct {
	// Op is the route that failed (one of the Op constants), or a short
	// description of a client-side step such as "parse sandbox ID".
	Op string
	// Category is the class of the failure.
	Category Category
	// HTTPStatus is the response status, or 0 when no response arrived.
	HTTPStatus int
	// Code is the platform's semantic error_code when it sent a well-formed
	// one, or one of the SDK's own: [CodeMalformedResponse],
	// [CodeResponseTooLarge].
	Code string
	// Field names the argument at fault, for client-side validation errors.
	Field string

	cause error // only context.Canceled or context.DeadlineExceeded: they carry no secret
}

// Error returns a message free of provider text, URLs and secrets.
func (e *Error) Error() string {
	msg := "sandbox: "
	if e.Op != "" {
		msg += e.Op + ": "
	}
	msg += string(e.Category)
	if e.Field != "" {
		msg += fmt.Sprintf(" (field %q)", e.Field)
	}
	if e.HTTPStatus != 0 {
		msg += fmt.Sprintf(" (http %d)", e.HTTPStatus)
	}
	if e.Code != "" {
		msg += fmt.Sprintf(" (code %s)", e.Code)
	}
	return msg
}

// Recovery returns the static recovery hint for the error's category.
func (e *Error) Recovery() string { return e.Category.Recovery() }

// Unwrap exposes a context cancellation cause, so that errors.Is(err,
// context.DeadlineExceeded) works; transport errors are never exposed since
// their text holds URLs.
func (e *Error) Unwrap() error { return e.cause }

// Is reports whether target is an *Error of the same category whose other
// fields are unset, so errors.Is(err, sandbox.ErrNotFound) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok {
		return false
	}
	return t.Category == e.Category && t.Op == "" && t.HTTPStatus == 0 && t.Code == "" && t.Field == ""
}

// Sentinels for errors.Is, one per category.
var (
	ErrInvalidArgument  = &Error{Category: InvalidArgument}
	ErrNotFound         = &Error{Category: NotFound}
	ErrUnauthenticated  = &Error{Category: Unauthenticated}
	ErrPermissionDenied = &Error{Category: PermissionDenied}
	ErrConflict         = &Error{Category: Conflict}
	ErrRateLimited      = &Error{Category: RateLimited}
	ErrTimeout          = &Error{Category: Timeout}
	ErrUnavailable      = &Error{Category: Unavailable}
	ErrProviderError    = &Error{Category: ProviderError}
	ErrInternal         = &Error{Category: Internal}
)

// CategoryOf returns the category of err: the category of an *Error in its
// chain, Timeout for a context deadline, and Internal for anything else.
func CategoryOf(err error) Category {
	var e *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &e):
		return e.Category
	case errors.Is(err, context.DeadlineExceeded):
		return Timeout
	default:
		return Internal
	}
}

// CategoryForStatus maps an HTTP status from the platform or the daemon to a category.
func CategoryForStatus(status int) Category {
	// ERR-4: the contract fixes this mapping for the statuses it names.
	switch status {
	case 400, 405, 406, 411, 413, 414, 415, 422:
		return InvalidArgument
	case 401:
		return Unauthenticated
	case 403:
		return PermissionDenied
	case 404, 410:
		return NotFound
	case 409, 412:
		return Conflict
	case 429:
		return RateLimited
	case 408, 504:
		return Timeout
	case 502, 503:
		return Unavailable
	default:
		return ProviderError
	}
}

var errorCodePattern = regexp.MustCompile(`^[A-Za-z0-9_.\-]{1,64}$`)

// statusError builds the error for a non-success response. code is the
// platform's error_code; it is kept only when it looks like an identifier,
// so a provider cannot smuggle text into it.
func statusError(op string, status int, code string) *Error {
	if !errorCodePattern.MatchString(code) {
		code = ""
	}
	return &Error{Op: op, Category: CategoryForStatus(status), HTTPStatus: status, Code: code}
}

// transportError classifies a failure to get a response at all.
func transportError(op string, err error) *Error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Op: op, Category: Timeout, cause: context.DeadlineExceeded}
	case errors.Is(err, context.Canceled):
		return &Error{Op: op, Category: Unavailable, cause: context.Canceled}
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return &Error{Op: op, Category: Timeout}
	}
	// A connection that could not be made carried no request: the
	// provider cannot have acted on it.
	var opErr *net.OpError
	if errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &opErr) && opErr.Op == "dial" {
		return &Error{Op: op, Category: Unavailable, Code: CodeNotSent}
	}
	return &Error{Op: op, Category: Unavailable}
}

// invalidArgument builds a client-side validation error naming the field.
func invalidArgument(op, field string) *Error {
	return &Error{Op: op, Category: InvalidArgument, Field: field}
}
