package fakeprovider

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
)

// NodeFetchPreload is a Node preload (node --require) that sends e2b 1.x's
// requests to the fake: api.<E2B_DOMAIN> to E2B_API_URL, and
// <port>-<id>.<E2B_DOMAIN> to E2B_SANDBOX_URL with the E2b-Sandbox-Id and
// E2b-Sandbox-Port headers, by replacing globalThis.fetch (see the file's
// comment). It changes code running in the user's server, so it is only
// ever used on explicit request.
//
//go:embed e2b1-fetch-preload.cjs
var NodeFetchPreload string

// NodeFetchPreloadName is the file name [WriteNodeFetchPreload] writes.
const NodeFetchPreloadName = "sandboxkit-e2b1-fetch.cjs"

// WriteNodeFetchPreload writes [NodeFetchPreload] into dir and returns the
// NODE_OPTIONS value that loads it ("--require=<path>").
func WriteNodeFetchPreload(dir string) (string, error) {
	path := filepath.Join(dir, NodeFetchPreloadName)
	if err := os.WriteFile(path, []byte(NodeFetchPreload), 0o644); err != nil {
		return "", fmt.Errorf("fakeprovider: write the Node preload: %w", err)
	}
	return "--require=" + path, nil
}
