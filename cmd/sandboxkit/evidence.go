package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sandboxkit/sandboxkit/conformance/cloudstate"
	"github.com/sandboxkit/sandboxkit/evidence"
)

// newEvidenceCommand checks and renders evidence bundles.
func newEvidenceCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "evidence",
		Short: "Verify and render evidence bundles of conformance runs",
		Long: `An evidence bundle is the record of one conformance run, written by
"sandboxkit conform --evidence-dir DIR": manifest.json (provenance),
results.json, junit.xml, transcript.jsonl (every MCP call, redacted),
server.log (redacted), summary.md and SHA256SUMS.

A bundle states its mode: cloud (a run against a real provider) or loopback
(a run against the kit's fake provider, which proves nothing about a real
provider). Recorded cloud runs live under evidence/records/; see its README.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newEvidenceVerifyCommand(), newEvidenceRenderCommand())
	return cmd
}

func newEvidenceVerifyCommand() *cobra.Command {
	var opts evidence.VerifyOptions
	cmd := &cobra.Command{
		Use:   "verify DIR",
		Short: "Check a bundle: hashes, required specs, secrets, mode",
		Long: `verify checks an evidence bundle and lists every problem:

  - SHA256SUMS covers exactly the bundle's files, in the form the writer
    produces, and every hash matches;
  - every spec that the bundle's kit version requires for its mode (the list
    evidence/required/<version>.txt) is present and passed, and none failed;
  - no file holds a secret pattern (API keys, bearer tokens, credential
    headers, token fields, URLs with credentials, the fake's canaries);
  - the bundle states cloud or loopback; cloud evidence names a provider API
    host that is not loopback and a known kit revision.

With --cloud the bundle must be cloud evidence: loopback evidence never
verifies as cloud evidence. The exit status is 0 when the bundle verifies.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if err := evidence.Verify(dir, &opts); err != nil {
				var verr *evidence.VerifyError
				if errors.As(err, &verr) {
					fmt.Fprintf(cmd.ErrOrStderr(), "%s: does NOT verify (%d problem(s)):\n", dir, len(verr.Problems))
					for _, p := range verr.Problems {
						fmt.Fprintf(cmd.ErrOrStderr(), "  %s\n", p)
					}
					return exitCodeError(1)
				}
				return err
			}
			b, err := evidence.Read(dir)
			if err != nil {
				return err
			}
			t := evidence.Count(b.Results)
			what := "loopback evidence (fake provider; not evidence of a real provider)"
			if b.Manifest.Mode == evidence.ModeCloud {
				what = "cloud evidence from " + b.Manifest.APIHost
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: verified: %s; kit %s (%s), server %s, run %s: %d passed, %d skipped\n",
				dir, what, b.Manifest.KitVersion, b.Manifest.KitRevision,
				strings.TrimSpace(b.Manifest.Server.Name+" "+b.Manifest.Server.Version), b.Manifest.RunID, t.Passed, t.Skipped)
			return nil
		},
	}
	cmd.Flags().BoolVar(&opts.Cloud, "cloud", false, "require cloud evidence (a run against a real provider)")
	return cmd
}

func newEvidenceRenderCommand() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "render DIR",
		Short: "Write one self-contained HTML page for a bundle",
		Long: `render writes one HTML page for an evidence bundle: its verification status,
the results table, each spec's MCP transcript, the provenance and the server
log. The page loads nothing from elsewhere; open it in a browser. It is
written where --output says, never inside the bundle (that would break
SHA256SUMS); by default to evidence.html in the run's folder under the user's
cache directory ($XDG_CACHE_HOME/sandboxkit/runs/RUN-ID), so that rendering a
committed record writes nothing into the repository. The path is printed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := filepath.Clean(args[0])
			dest := out
			if dest == "" {
				var err error
				if dest, err = defaultPagePath(dir); err != nil {
					return err
				}
			}
			if abs, err := filepath.Abs(dest); err == nil {
				if absDir, err := filepath.Abs(dir); err == nil && filepath.Dir(abs) == absDir {
					return fmt.Errorf("--output %s is inside the bundle: write the page elsewhere", dest)
				}
			}
			if err := evidence.RenderFile(dir, dest); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), dest)
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "path of the HTML page (default: evidence.html in the run's folder under the user's cache directory)")
	return cmd
}

// defaultPagePath is where render writes a bundle's page without
// --output: evidence.html in the folder of the bundle's run (runsDir), the
// folder conform uses for the run's other outputs.
func defaultPagePath(dir string) (string, error) {
	b, err := evidence.Read(dir)
	if err != nil {
		return "", err
	}
	runID := b.Manifest.RunID
	if !cloudstate.ValidRunID(runID) {
		return "", fmt.Errorf("%s: manifest run ID %q cannot name a folder: give --output", dir, runID)
	}
	root, err := runsDir()
	if err != nil {
		return "", err
	}
	folder := filepath.Join(root, runID)
	if err := os.MkdirAll(folder, 0o700); err != nil {
		return "", fmt.Errorf("render: %w", err)
	}
	return filepath.Join(folder, "evidence.html"), nil
}
