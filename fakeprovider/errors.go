package fakeprovider

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// apiError is E2B's error body (components.schemas.Error).
type apiError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// Messages the platform sends, copied from E2B's handlers.
const (
	msgInvalidSandboxID   = "Invalid sandbox ID"
	msgTimeoutNotPositive = "Timeout must be greater than 0"
	msgMaxInstanceLength  = "Max instance length exceeded"
	msgAuthMissing        = "authorization header is missing"
	msgAuthMalformed      = "authorization header is malformed"
	msgAuthInvalid        = "Invalid API key, please visit https://e2b.dev/docs/api-key for more information."
	msgSandboxLimit       = "you have reached the maximum number of concurrent E2B sandboxes (%d). If you need more, please visit 'https://e2b.dev/docs/billing'"
	msgInvalidNextToken   = "Invalid next token"
	msgMetadataParse      = "Error parsing metadata"
	msgValidationPrefix   = "validation error: error in openapi3filter.RequestError: "
)

// msgSandboxNotFound is the 404 message for an unknown, expired or killed sandbox.
func msgSandboxNotFound(id string) string {
	return fmt.Sprintf("Sandbox %q doesn't exist or you don't have access to it", id)
}

// msgTimeoutTooLong is the 400 message for a create/connect timeout above the maximum.
func msgTimeoutTooLong(p *Provider) string {
	return fmt.Sprintf("Timeout cannot be greater than %d hours", int(p.maxTimeout.Hours()))
}

// msgParse is the 400 message for a body that is not the expected JSON.
func msgParse(err error) string {
	return fmt.Sprintf("Error when parsing request: %s", err)
}

// writeError writes E2B's {"code","message"} body. With canaries on, every
// message leaves with a canary and a URL appended, so that a test can tell
// when a client surfaces a raw provider message or a request URL. A 429
// carries Retry-After, as the platform's rate limiter sets it.
func (p *Provider) writeError(w http.ResponseWriter, r *http.Request, status int, msg string) {
	if p.canaryMode {
		c := p.canaries.issue(canaryError)
		msg = fmt.Sprintf("%s (request https://api.%s.%s%s ref %s)", msg, c, DomainSuffix, r.URL.Path, c)
	}
	if status == http.StatusTooManyRequests && w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", retryAfterSeconds)
	}
	p.writeJSON(w, status, apiError{Code: status, Message: msg})
}

// retryAfterSeconds is the Retry-After of the fake's 429 answers.
const retryAfterSeconds = "1"

// writeJSON writes v as a JSON response with status.
func (p *Provider) writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Only the fake's own wire types reach here; they always marshal.
		panic(fmt.Errorf("fakeprovider: marshal response: %w", err))
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
