package main

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
)

// addE2B1Flags adds --e2b1 (how e2b 1.x reaches the fake) and its hidden
// test seam --e2b1-debug-addrs to f.
func addE2B1Flags(f *pflag.FlagSet, path, addrs *string) {
	f.StringVar(path, "e2b1", "", `reach servers on e2b 1.x, which reads no E2B_API_URL: "debug" (serve the fake on localhost:3000, 49983 and 49999 and set E2B_DEBUG=true) or "preload" (Node only: a NODE_OPTIONS preload that redirects fetch; explicit opt-in)`)
	f.StringVar(addrs, "e2b1-debug-addrs", "", "API,envd,code-interpreter loopback addresses for --e2b1 debug (default localhost:3000,localhost:49983,localhost:49999; for tests)")
	_ = f.MarkHidden("e2b1-debug-addrs")
}

// e2b1Flags parses --e2b1 and --e2b1-debug-addrs.
func e2b1Flags(path, addrs string) (fakeprovider.E2B1Path, fakeprovider.DebugAddrs, error) {
	p, err := fakeprovider.ParseE2B1Path(path)
	if err != nil {
		return p, fakeprovider.DebugAddrs{}, fmt.Errorf(`--e2b1 must be "debug" or "preload", got %q`, path)
	}
	if addrs == "" {
		return p, fakeprovider.DefaultDebugAddrs(), nil
	}
	parts := strings.Split(addrs, ",")
	if len(parts) != 3 {
		return p, fakeprovider.DebugAddrs{}, fmt.Errorf("--e2b1-debug-addrs must be three addresses API,envd,code-interpreter, got %q", addrs)
	}
	return p, fakeprovider.DebugAddrs{API: parts[0], Envd: parts[1], CodeInterpreter: parts[2]}, nil
}
