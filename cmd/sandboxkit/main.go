// Command sandboxkit is the sandboxkit command line: the reference MCP
// server (serve), the conformance kit (conform), the fake provider
// (fake-provider) and evidence tools (evidence).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
)

func main() {
	// A namespace sandbox (--exec namespace) is this program re-run.
	fakeprovider.RunSandboxRole()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCommand().ExecuteContext(ctx)
	stop()
	if err != nil {
		var exit exitCodeError
		if asExitCode(err, &exit) {
			os.Exit(int(exit))
		}
		fmt.Fprintln(os.Stderr, "sandboxkit:", err)
		os.Exit(1)
	}
}

// newRootCommand builds the command tree. Each subcommand lives in its own
// file and only maps flags onto a library configuration.
func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "sandboxkit",
		Short: "Conformance kit, reference MCP server and fake provider for sandbox MCP tools",
		Long: `sandboxkit checks MCP servers that expose cloud code sandboxes (E2B and
E2B-compatible providers) against the tool contract, and ships a reference
server and an in-memory fake provider to run them against.`,
		Version:       buildVersion(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newFakeProviderCommand())
	root.AddCommand(newConformCommand())
	root.AddCommand(newServeCommand())
	root.AddCommand(newEvidenceCommand())
	root.AddCommand(newSweepCommand())
	return root
}
