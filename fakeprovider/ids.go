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
