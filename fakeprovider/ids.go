package fakeprovider

import (
	"errors"
	"regexp"
	"strings"
)

// sandboxIDPattern is what E2B accepts as a sandbox ID once reduced.
var sandboxIDPattern = regexp.MustCompile(`^[a-z0-9]+$`)

// errInvalidSandboxID reports an ID that E2B would answer with 400.
var errInvalidSandboxID = errors.New("invalid sandbox ID")

// shortID reduces a sandbox ID the way E2B's utils.ShortID does: a legacy
// "<sandboxID>-<clientID>" keeps the part before the "-", more than one "-"
// is an error, and the result must match ^[a-z0-9]+$.
func shortID(id string) (string, error) {
	parts := strings.Split(id, "-")
	if len(parts) > 2 {
		return "", errInvalidSandboxID
	}
	if !sandboxIDPattern.MatchString(parts[0]) {
		return "", errInvalidSandboxID
	}
	return parts[0], nil
}

// newSandboxID returns a fresh ID in E2B's format: "i" + 20 of [a-z0-9].
func newSandboxID() string { return "i" + randomID(20) }

// CanonicalSandboxID returns the sandbox ID the fake files id under: a
// legacy "<sandboxID>-<clientID>" (what the Python SDK 1.x returns as
// sandbox_id: sandbox_sync/sandbox_api.py SandboxApi._create_sandbox builds
// f"{sandbox_id}-{client_id}"; JS e2b@1.13.2 returns the bare sandboxID,
// dist/index.mjs createSandbox) becomes "<sandboxID>", as the platform's
// utils.ShortID reduces it. An ID the platform would refuse
// comes back unchanged.
func CanonicalSandboxID(id string) string {
	if short, err := shortID(id); err == nil {
		return short
	}
	return id
}

// SameSandbox reports whether the IDs a and b name the same sandbox, the
// legacy "<sandboxID>-<clientID>" form and the short one alike.
func SameSandbox(a, b string) bool {
	return CanonicalSandboxID(a) == CanonicalSandboxID(b)
}
