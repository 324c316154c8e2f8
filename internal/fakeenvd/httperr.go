package fakeenvd

import (
	"encoding/json"
	"net/http"

	"github.com/sandboxkit/sandboxkit/internal/envdapi"
)

// writeJSONError writes envd's plain-HTTP error body {"code","message"}.
func writeJSONError(w http.ResponseWriter, code int, message string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(envdapi.HTTPError{Code: code, Message: message})
}

// WriteGone writes the platform edge's 502 for a sandbox that is gone
// (e2b-dev/infra packages/shared/pkg/proxy/template/sandbox_not_found.go):
// {"sandboxId","message","code"}.
func WriteGone(w http.ResponseWriter, sandboxID string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusBadGateway)
	_ = json.NewEncoder(w).Encode(struct {
		SandboxID string `json:"sandboxId"`
		Message   string `json:"message"`
		Code      int    `json:"code"`
	}{sandboxID, "The sandbox was not found", http.StatusBadGateway})
}
