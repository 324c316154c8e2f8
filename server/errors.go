package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/sandboxkit/sandboxkit/sandbox"
)

// ToolError is the one shape of every tool failure (ERR-2). It is what a
// client reads under "error" in the JSON of the result's one text block (a
// tool error carries no structuredContent). It never holds a provider message, a URL, a submitted
// value or a stack trace (ERR-3, VAL-6).
type ToolError struct {
	// Category is one of the fixed sandbox categories.
	Category sandbox.Category `json:"category"`
	// HTTPStatus is the platform's or daemon's response status, when there was one.
	HTTPStatus int `json:"http_status,omitempty"`
	// Code is the platform's semantic error code or one of the server's own
	// static codes (for example "no_default_sandbox").
	Code string `json:"code,omitempty"`
	// Field names the argument at fault.
	Field string `json:"field,omitempty"`
	// Recovery is a static hint on what to do next.
	Recovery string `json:"recovery,omitempty"`
}

// Error returns a message built only from the error's fields.
func (e *ToolError) Error() string {
	msg := "tool error: " + string(e.Category)
	if e.Field != "" {
		msg += fmt.Sprintf(" (field %q)", e.Field)
	}
	if e.HTTPStatus != 0 {
		msg += fmt.Sprintf(" (http %d)", e.HTTPStatus)
	}
	if e.Code != "" {
		msg += " (code " + e.Code + ")"
	}
	return msg
}

// errorEnvelope is the JSON of a failed call's text block.
type errorEnvelope struct {
	Error *ToolError `json:"error"`
}

// Static codes and hints of the server's own failures.
const (
	codeNoDefault       = "no_default_sandbox"
	codeSessionClosed   = "session_closed"
	codeInvalidArgument = "invalid_argument"
	codeNotUTF8         = "not_utf8"
	codeTooLarge        = "too_large"
	codeUnknownCommand  = "unknown_command"
	codeTooMany         = "too_many_commands"
	codeCommandTimeout  = "command_timeout"
	codeBadBase64       = "invalid_base64"
	codeServerBusy      = "server_busy"

	hintNoDefault = "This session has no default sandbox; pass sandbox_id, or call create_sandbox first."
	// hintNoDefaultModern is MODERN-1's recovery, naming create_sandbox.
	hintNoDefaultModern = "A 2026-07-28 request has no default sandbox: pass sandbox_id, the one create_sandbox returned (call create_sandbox first if you have none)."
	hintSessionClosed   = "The MCP session has ended; open a new session."
	hintUseDownload     = "The file is binary or too large for read_file; use download_file instead."
	hintUnknownCmd      = "The command_id is unknown in this session; use the command_id returned by start_background_command in the same session."
	// hintUnknownCmdModern is HANDLE-3's text for a command_id.
	hintUnknownCmdModern = "The command_id is unknown, or its sandbox expired or was killed; start the command again with start_background_command."
	hintTooMany          = "Too many background commands in this session; kill finished ones with kill_background_command."
	hintServerBusy       = "The server is moving as many bytes as it may at once; retry shortly, ask for fewer bytes (max_bytes), or use transfer \"url\"."
	hintCmdTimeout       = "The command did not finish within its timeout and was killed; raise timeout (at most 3600 s) or use start_background_command."
)

// invalidField is the validation error of one argument: it names the field
// and nothing else (VAL-6).
func invalidField(field string) *ToolError {
	return &ToolError{Category: sandbox.InvalidArgument, Field: field, Recovery: sandbox.InvalidArgument.Recovery()}
}

// noDefaultError is GET-2 / TIMEOUT-2 / SESSION-3 without a default sandbox.
func noDefaultError() *ToolError {
	return &ToolError{Category: sandbox.InvalidArgument, Code: codeNoDefault, Field: "sandbox_id", Recovery: hintNoDefault}
}

// sessionClosedError answers a call that arrives after its session closed.
func sessionClosedError() *ToolError {
	return &ToolError{Category: sandbox.Unavailable, Code: codeSessionClosed, Recovery: hintSessionClosed}
}

// internalError is the answer to anything the server did not expect.
func internalError() *ToolError {
	return &ToolError{Category: sandbox.Internal, Recovery: sandbox.Internal.Recovery()}
}

// toToolError maps any error to the contract's shape. Only the category,
// status, code and field of an SDK error survive; any other error becomes
// timeout (context deadline), unavailable (cancellation) or internal, and its
// text is dropped.
func toToolError(err error) *ToolError {
	var te *ToolError
	if errors.As(err, &te) {
		if te.Recovery == "" {
			c := *te
			c.Recovery = te.Category.Recovery()
			return &c
		}
		return te
	}
	var se *sandbox.Error
	if errors.As(err, &se) {
		return &ToolError{Category: se.Category, HTTPStatus: se.HTTPStatus, Code: se.Code, Field: se.Field, Recovery: se.Recovery()}
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return &ToolError{Category: sandbox.Timeout, Recovery: sandbox.Timeout.Recovery()}
	case errors.Is(err, context.Canceled):
		return &ToolError{Category: sandbox.Unavailable, Recovery: sandbox.Unavailable.Recovery()}
	}
	return internalError()
}

// isNotFound reports whether err is the platform saying the sandbox is gone.
func isNotFound(err error) bool { return sandbox.CategoryOf(err) == sandbox.NotFound }
