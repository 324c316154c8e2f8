package envdapi

import (
	"crypto/sha256"
	"encoding/base64"
	"strconv"
)

// Operations a /files URL signature is scoped to, as envd names them
// (e2b-dev/infra packages/envd/internal/api/auth.go SigningReadOperation,
// SigningWriteOperation).
const (
	SignRead  = "read"
	SignWrite = "write"
)

// FileSignature is envd's signature of a /files URL: "v1_" and the unpadded
// standard base64 of SHA-256 over "path:operation:username:token", with
// ":expiration" appended when set (e2b@2.51.0 dist/index.mjs:1427-1438
// getSignature; envd checks it in e2b-dev/infra
// packages/envd/internal/api/auth.go generateSignature, validateSigning).
// username is the one the URL names ("" for the default user). The SDK
// signs with it and the fake's daemon checks with it, so the two cannot
// disagree; the SDK's test recomputes it from the JS code as written.
func FileSignature(path, operation, username, token string, expiration *int64) string {
	raw := path + ":" + operation + ":" + username + ":" + token
	if expiration != nil {
		raw += ":" + strconv.FormatInt(*expiration, 10)
	}
	sum := sha256.Sum256([]byte(raw))
	return "v1_" + base64.RawStdEncoding.EncodeToString(sum[:])
}
