package fakeprovider

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
)

// An E2B1Path is a way for a client on e2b 1.x, which reads neither
// E2B_API_URL nor E2B_SANDBOX_URL, to reach the fake.
type E2B1Path string

// The ways to reach e2b 1.x.
const (
	// E2B1None: only E2B_API_URL and E2B_SANDBOX_URL (e2b 2.x).
	E2B1None E2B1Path = ""
	// E2B1Debug serves the fake where 1.x looks with E2B_DEBUG=true (see
	// [ListenDebug]) and sets E2B_DEBUG=true: JS and Python alike, but
	// debug mode never calls create, kill or set-timeout, so the client
	// works on one sandbox at a time.
	E2B1Debug E2B1Path = "debug"
	// E2B1Preload loads [NodeFetchPreload] into Node (NODE_OPTIONS): JS
	// only, with every call of the SDK reaching the fake as it would reach
	// the platform. It changes code in the client's process, so it is only
	// ever taken on request.
	E2B1Preload E2B1Path = "preload"
)

// ParseE2B1Path parses "", "debug" or "preload".
func ParseE2B1Path(s string) (E2B1Path, error) {
	switch p := E2B1Path(s); p {
	case E2B1None, E2B1Debug, E2B1Preload:
		return p, nil
	}
	return E2B1None, fmt.Errorf(`fakeprovider: an e2b 1.x path is "debug" or "preload", got %q`, s)
}

// An E2B1Reach is a way for e2b 1.x to reach the fake, set up.
type E2B1Reach struct {
	// Env is the environment to add to the client's ("KEY=value").
	Env []string
	// Console says which path was taken and what it means, for the user.
	Console string
	close   func() error
}

// Close stops what the reach started (listeners, the preload's folder).
func (r *E2B1Reach) Close() error {
	if r == nil || r.close == nil {
		return nil
	}
	return r.close()
}

// ReachE2B1 sets up path for h (a Provider, or a handler fronting
// Providers): for [E2B1Debug] it serves h on addrs (see [ListenDebug]); for
// [E2B1Preload] it writes the preload into a new folder under dir (""
// for the system's temporary folder). For [E2B1None] it returns an empty
// reach.
func ReachE2B1(path E2B1Path, h http.Handler, addrs DebugAddrs, dir string) (*E2B1Reach, error) {
	switch path {
	case E2B1Debug:
		d, err := ListenDebug(h, addrs)
		if err != nil {
			return nil, err
		}
		return &E2B1Reach{
			Env: []string{"E2B_DEBUG=true"},
			Console: fmt.Sprintf("e2b 1.x path: debug endpoints (E2B_DEBUG=true): API on %s, envd (49983) on %s, code interpreter (49999) on %s; "+
				"debug mode never calls create, kill or set-timeout, so requests on the sandbox ports go to the one running sandbox",
				d.API.Addr(), d.Envd.Addr(), d.CodeInterpreter.Addr()),
			close: d.Close,
		}, nil
	case E2B1Preload:
		folder, err := os.MkdirTemp(dir, "sandboxkit-e2b1-")
		if err != nil {
			return nil, fmt.Errorf("fakeprovider: folder for the Node preload: %w", err)
		}
		opt, err := WriteNodeFetchPreload(folder)
		if err != nil {
			return nil, errors.Join(err, os.RemoveAll(folder))
		}
		return &E2B1Reach{
			Env: []string{"NODE_OPTIONS=" + opt},
			Console: "e2b 1.x path: Node preload (NODE_OPTIONS=" + opt + ") redirects fetch from api.<E2B_DOMAIN> and <port>-<id>.<E2B_DOMAIN> " +
				"to the fake (JS only; replaces any NODE_OPTIONS of the server's own)",
			close: func() error { return os.RemoveAll(folder) },
		}, nil
	}
	return &E2B1Reach{}, nil
}

// E2B1Paths lists the paths a flag may name, for help texts.
func E2B1Paths() string { return strings.Join([]string{string(E2B1Debug), string(E2B1Preload)}, ", ") }
