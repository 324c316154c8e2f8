package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
)

// newFakeProviderCommand serves the in-memory fake provider on loopback
// until interrupted.
func newFakeProviderCommand() *cobra.Command {
	var (
		addr            string
		apiKey          string
		sandboxLimit    int
		acceptResources bool
		canaries        bool
		routes          string
		e2b1            string
		e2b1Addrs       string
		exec            execFlags
	)
	cmd := &cobra.Command{
		Use:   "fake-provider",
		Short: "Serve the in-memory fake E2B-compatible provider on loopback",
		Long: `fake-provider serves sandboxkit's in-memory fake of an E2B-compatible
sandbox platform on a loopback address until interrupted (Ctrl-C / SIGTERM).

It speaks E2B's control-plane API with E2B's paths, status codes, field names
and error bodies: create and connect on both route families (POST
/v2/sandboxes and /v2/sandboxes/{id}/connect, as the JS SDK 2.x calls them;
POST /sandboxes and /sandboxes/{id}/connect, as the Python SDK does), GET
/v2/sandboxes and the legacy GET /sandboxes, GET/DELETE /sandboxes/{id}, and
POST /sandboxes/{id}/timeout and /pause, GET /sandboxes/{id}/metrics, fork
(POST /sandboxes/{id}/fork), snapshots (POST /sandboxes/{id}/snapshots, GET
/snapshots, DELETE /templates/{id}, create from a snapshot ID), network
updates (PUT /sandboxes/{id}/network) and the template alias lookup (GET
/templates/aliases/{alias}). It keeps every sandbox and snapshot in memory and
forgets everything when it stops (see the fakeprovider package documentation
for every known difference from the platform). Requests addressed to a
sandbox's daemon (envd) - header E2b-Sandbox-Id, or host 49983-<id>.<domain> -
go to that sandbox's in-memory daemon: a filesystem (home /home/user) and a
shell whose commands (cat, ls, echo, seq, sleep, grep, python3, node, ...) are
built in, so commands and file transfers work and no host process is ever
started. Port 49999 (E2b-Sandbox-Port, or host 49999-<id>.<domain>) is the
code interpreter that @e2b/code-interpreter's runCode calls, in-process too:
python (a Starlark dialect), javascript (goja) and bash.

By default it answers what the platform answers: metadata comes back exactly
as it was sent, error messages are the platform's, domain is null. Only the
secrets the platform itself hands out (envdAccessToken, trafficAccessToken)
contain a recognisable "canary-<kind>-<hex>" string. --canaries turns on the
leak detectors a client can see, as the conformance kit does: a
sandboxkit-canary metadata entry, a SANDBOXKIT_CANARY environment variable, a
canary client ID and domain, and a canary reference with a URL at the end of
every error message, so a leak into logs or tool results is easy to spot.

On start it prints, one per line on stdout, the environment that points an
E2B SDK (or an MCP server using one) at it:

  E2B_API_URL=http://127.0.0.1:<port>
  E2B_API_KEY=e2b_<hex>
  E2B_DOMAIN=sandboxkit.test
  E2B_SANDBOX_URL=http://127.0.0.1:<port>

For example:

  sandboxkit fake-provider > fake.env &
  sleep 1; set -a; . ./fake.env; set +a
  python -c 'from e2b import Sandbox; print(Sandbox.list().next_items())'

E2B_API_URL replaces https://api.<domain>; E2B_SANDBOX_URL sends envd
traffic to the same server with the E2b-Sandbox-Id header.

e2b 1.x (and @e2b/code-interpreter 1.x) reads neither variable. --e2b1 debug
also serves the fake where 1.x looks with E2B_DEBUG=true (the API on
localhost:3000, envd on localhost:49983, the code interpreter on
localhost:49999) and prints E2B_DEBUG=true. 1.x in debug mode sends no
sandbox ID to those ports and never calls create, kill or set-timeout, so a
request there goes to the one running sandbox (the fake starts one if none
runs, and answers 502 when several do); stderr says so when it happens.
--e2b1 preload instead writes a Node preload and prints
NODE_OPTIONS=--require=<file>: it replaces fetch in the Node process so that
api.<E2B_DOMAIN> and <port>-<id>.<E2B_DOMAIN> reach the fake, and every SDK
call works as against the platform (JS only; it changes code in your
process, so it is only used when you ask for it).

--exec namespace (Linux, as root) makes every sandbox real instead: this
program re-run in new mount, pid, uts, ipc and network namespaces over an
overlay of --rootfs (default /) with a writable layer of its own, so
commands are real processes (python3, pip, git, a server on loopback:
whatever the root filesystem has) run as user (uid 1000) or root, and files
are real. A probe sandbox runs true at start-up; if it fails the command
exits with the reason. It is for trusted code only: sandboxes share the
host's kernel.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if apiKey != "" && !strings.HasPrefix(apiKey, "e2b_") {
				return errors.New(`--api-key must start with "e2b_", as E2B keys do`)
			}
			if sandboxLimit < 0 {
				return fmt.Errorf("--sandbox-limit must not be negative, got %d", sandboxLimit)
			}
			family, err := routeFamily(routes)
			if err != nil {
				return err
			}
			path, addrs, err := e2b1Flags(e2b1, e2b1Addrs)
			if err != nil {
				return err
			}
			newDaemon, err := exec.newDaemon(cmd.Context())
			if err != nil {
				return err
			}
			errOut := cmd.ErrOrStderr()
			p := fakeprovider.New(&fakeprovider.Options{
				NewDaemon:       newDaemon,
				OnDebugRoute:    func(e fakeprovider.DebugEvent) { fmt.Fprintf(errOut, "sandboxkit fake-provider: %s\n", e) },
				APIKey:          apiKey,
				SandboxLimit:    sandboxLimit,
				AcceptResources: acceptResources,
				Canaries:        canaries,
				Routes:          family,
			})
			defer p.Close()
			srv, err := p.Listen(addr)
			if err != nil {
				return fmt.Errorf("start fake provider: %w", err)
			}
			defer srv.Close()

			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "E2B_API_URL=%s\n", srv.URL())
			fmt.Fprintf(out, "E2B_API_KEY=%s\n", p.APIKey())
			fmt.Fprintf(out, "E2B_DOMAIN=%s\n", fakeprovider.DomainSuffix)
			fmt.Fprintf(out, "E2B_SANDBOX_URL=%s\n", srv.URL())
			reach, err := fakeprovider.ReachE2B1(path, p, addrs, "")
			if err != nil {
				return fmt.Errorf("--e2b1 %s: %w", e2b1, err)
			}
			defer reach.Close()
			for _, kv := range reach.Env {
				fmt.Fprintln(out, kv)
			}
			if reach.Console != "" {
				fmt.Fprintf(errOut, "sandboxkit fake-provider: %s\n", reach.Console)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "sandboxkit fake-provider: serving an E2B-compatible provider with %s on %s until interrupted\n", exec.kind(), srv.URL())

			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			<-ctx.Done()
			if err := srv.Close(); err != nil {
				return fmt.Errorf("stop fake provider: %w", err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&addr, "addr", "127.0.0.1:0", "loopback address to listen on (host must be 127.0.0.1, ::1 or localhost)")
	f.StringVar(&apiKey, "api-key", "", `API key to accept (must start with "e2b_"; default: a random one, printed as E2B_API_KEY)`)
	f.IntVar(&sandboxLimit, "sandbox-limit", fakeprovider.DefaultSandboxLimit, "number of sandboxes that may run at once; creating more gives 429")
	f.BoolVar(&acceptResources, "accept-resources", false, `accept "cpuCount" and "memoryMB" on create (otherwise 400, as for an unknown field)`)
	f.BoolVar(&canaries, "canaries", false, "turn on the leak detectors a client can see (metadata and env entries, canary domain and client ID, error-message suffix)")
	addE2B1Flags(f, &e2b1, &e2b1Addrs)
	f.StringVar(&routes, "routes", "all", `create/connect route families to serve: "all", "v1" (POST /sandboxes...) or "v2" (POST /v2/sandboxes...); the other answers 404`)
	exec.add(f)
	return cmd
}

// routeFamily parses --routes.
func routeFamily(s string) (fakeprovider.RouteFamily, error) {
	switch s {
	case "all", "":
		return fakeprovider.AllRoutes, nil
	case "v1":
		return fakeprovider.V1Routes, nil
	case "v2":
		return fakeprovider.V2Routes, nil
	}
	return 0, fmt.Errorf(`--routes must be "all", "v1" or "v2", got %q`, s)
}
