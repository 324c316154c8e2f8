package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// newConformCommand runs the conformance kit.
func newConformCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "conform",
		Short: "Run the conformance kit against an MCP server",
		Long: `conform runs the conformance kit against the reference server (in-process,
with the embedded fake provider) or against another MCP server.

The kit is not built yet: this command reports that and exits with status 2.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprintln(cmd.ErrOrStderr(), "sandboxkit conform: the conformance kit is not built yet; see README.md (Status)")
			return exitCodeError(2)
		},
	}
}
