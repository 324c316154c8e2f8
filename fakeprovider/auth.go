package fakeprovider

import (
	"crypto/subtle"
	"net/http"
	"strings"
)

// apiKeyHeader is the header the control plane reads the key from. Header
// names are case-insensitive; the Python SDK sends "X-API-KEY".
const apiKeyHeader = "X-API-Key"

// apiKeyPrefix is the prefix E2B requires before it even looks the key up.
const apiKeyPrefix = "e2b_"

// authorize checks the request's API key the way E2B's security middleware
// does and writes the 401 itself when the key is missing, malformed or
// wrong. It reports whether the request may proceed.
func (p *Provider) authorize(w http.ResponseWriter, r *http.Request) bool {
	key := r.Header.Get(apiKeyHeader)
	var msg string
	switch {
	case key == "":
		msg = msgAuthMissing
	case !strings.HasPrefix(key, apiKeyPrefix):
		msg = msgAuthMalformed
	case subtle.ConstantTimeCompare([]byte(key), []byte(p.apiKey)) != 1:
		msg = msgAuthInvalid
	default:
		return true
	}
	p.writeError(w, r, http.StatusUnauthorized, msg)
	return false
}
