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
	)
	cmd := &cobra.Command{
		Use:   "fake-provider",
		Short: "Serve the in-memory fake E2B-compatible provider on loopback",
		Long: `fake-provider serves sandboxkit's in-memory fake of an E2B-compatible
sandbox platform on a loopback address until interrupted (Ctrl-C / SIGTERM).

It speaks E2B's control-plane API (GET /v2/sandboxes, POST /sandboxes,
GET/DELETE /sandboxes/{id}, POST /sandboxes/{id}/timeout and /connect) with
E2B's paths, status codes, field names and error bodies, keeps every sandbox
in memory, and forgets everything when it stops. Requests addressed to a
sandbox's daemon (envd) - header E2b-Sandbox-Id, or host 49983-<id>.<domain> -
go to that sandbox's in-memory daemon: a filesystem (home /home/user) and a
shell whose commands (cat, ls, echo, seq, sleep, grep, ...) are built in, so
commands and file transfers work and no host process is ever started.

Every secret the fake hands out (access tokens, domains, client IDs, a
metadata entry, an environment variable, every error message) contains a
recognisable "canary-<kind>-<hex>" string, so a leak into logs or tool
results is easy to spot.

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
traffic to the same server with the E2b-Sandbox-Id header.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if apiKey != "" && !strings.HasPrefix(apiKey, "e2b_") {
				return errors.New(`--api-key must start with "e2b_", as E2B keys do`)
			}
			if sandboxLimit < 0 {
				return fmt.Errorf("--sandbox-limit must not be negative, got %d", sandboxLimit)
			}
			p := fakeprovider.New(&fakeprovider.Options{
				APIKey:          apiKey,
				SandboxLimit:    sandboxLimit,
				AcceptResources: acceptResources,
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
			fmt.Fprintf(cmd.ErrOrStderr(), "sandboxkit fake-provider: serving an in-memory E2B-compatible provider on %s until interrupted\n", srv.URL())

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
	return cmd
}
