//go:build tools

// Package dex pins Dex (github.com/dexidp/dex), the OpenID Connect
// authorization server that server/oauth_dex_test.go runs on loopback to
// test serve's OAuth resource server against a real issuer. It is a module
// of its own so that Dex's dependencies stay out of sandboxkit's go.mod;
// .ci/run builds it with "go build github.com/dexidp/dex/cmd/dex" here.
//
// Dex is pinned by commit: its v2 tags have no /v2 module path, so the
// module proxy serves it only by pseudo-version. The commit is the v2.44.0
// release, whose api/v2 is the api/v2.4.0 tag (Dex's own go.mod replaces
// api/v2 with its directory, which a dependency cannot do).
package dex

import _ "github.com/dexidp/dex/cmd/dex"
