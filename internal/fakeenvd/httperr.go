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
