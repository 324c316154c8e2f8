package main

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxkit/sandboxkit/conformance"
	"github.com/sandboxkit/sandboxkit/conformance/cloudstate"
	"github.com/sandboxkit/sandboxkit/sandbox"
	"github.com/sandboxkit/sandboxkit/server"
)

// newSweepCommand destroys what an interrupted cloud run left behind.
func newSweepCommand() *cobra.Command {
	var (
		opts    cloudstate.SweepOptions
		list    bool
		orphans orphanSweepConfig
	)
	cmd := &cobra.Command{
		Use:   "sweep --run ID | --orphans [--instance ID] [--dry-run]",
		Short: "Destroy the sandboxes an interrupted cloud run, or a dead server instance, left behind",
		Long: `A cloud conformance run ("sandboxkit conform --cloud") records every sandbox
it creates in a state file (<state dir>/<run ID>.json) the moment it sees
the ID, and destroys them all at the end. When a run is killed before it
ends, sweep destroys exactly the sandboxes of that run's state file that are
not known to be gone, by ID (KillByID). It never lists the account and never
touches any other sandbox: a sandbox the server under test reported as
created is read first (by ID) and left alone when the provider says it
started before the run. A sandbox already gone counts as done; the state
file is updated, so a sweep can be repeated.

The provider credentials come from the environment (E2B_API_KEY, E2B_API_URL,
...) and must point at the API host the run used. A run whose process is
still alive on this host is refused unless --force.

Orphans of a server. With --orphans, sweep destroys every sandbox whose
platform metadata names the server instance --instance ID (default
$SANDBOXKIT_INSTANCE) as its owner (sandboxkit_instance=ID): what a
"sandboxkit serve --instance ID" process owned when it was killed (kill -9,
OOM, a lost node). It selects by the platform's own metadata filter, so a
sandbox without that tag is never touched. Run it only for an instance that
is not running: a live instance's sandboxes would be destroyed under its
sessions. A replica started again under the same ID does this by itself
before it serves. --dry-run lists and destroys nothing. --config adds
providers, as for serve. Exit status 1 when something could not be listed
or destroyed.

Examples:
  sandboxkit sweep --list
  sandboxkit sweep --run 20261202T170744Z-1a2b3c4d
  sandboxkit sweep --orphans --instance replica-1 --dry-run`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if orphans.enabled {
				if opts.RunID != "" || list {
					return errors.New("--orphans cannot be combined with --run or --list")
				}
				return runOrphanSweep(cmd, orphans, os.Getenv)
			}
			if list {
				return printRuns(cmd, opts.StateDir)
			}
			if opts.RunID == "" {
				return errors.New("--run ID is required (sweeping is per run); --list shows the runs")
			}
			opts.UserAgent = "sandboxkit-sweep/" + conformance.Version
			res, err := cloudstate.Sweep(cmd.Context(), &opts)
			if res != nil {
				out := cmd.OutOrStdout()
				for _, id := range res.Destroyed {
					fmt.Fprintf(out, "destroyed %s\n", id)
				}
				for _, id := range res.AlreadyGone {
					fmt.Fprintf(out, "already gone %s\n", id)
				}
				for _, id := range res.NotCreated {
					fmt.Fprintf(out, "left alone %s (started before the run: not created by it)\n", id)
				}
				failed := make([]string, 0, len(res.Failed))
				for id := range res.Failed {
					failed = append(failed, id)
				}
				sort.Strings(failed)
				for _, id := range failed {
					fmt.Fprintf(out, "NOT destroyed %s (%s)\n", id, res.Failed[id])
				}
				fmt.Fprintf(out, "run %s: %d destroyed, %d already gone, %d failed\n", res.RunID, len(res.Destroyed), len(res.AlreadyGone), len(res.Failed))
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.RunID, "run", "", "ID of the run to sweep")
	fl.StringVar(&opts.StateDir, "state-dir", "", "directory of the runs' state files (default $XDG_STATE_HOME/sandboxkit/runs)")
	fl.BoolVar(&opts.Force, "force", false, "sweep even though the run's process still seems to be running")
	fl.BoolVar(&list, "list", false, "list the recorded runs and how many of their sandboxes may still exist")

	// Orphans of a dead server instance (docs/deploy.md, "Ownership that survives the owner").
	fl.BoolVar(&orphans.enabled, "orphans", false, "destroy the sandboxes a dead server instance owned (selected by their sandboxkit_instance metadata)")
	fl.StringVar(&orphans.instance, "instance", "", "with --orphans: the dead server instance's ID (default $"+serveInstanceEnv+")")
	fl.BoolVar(&orphans.dryRun, "dry-run", false, "with --orphans: list what would be destroyed, destroy nothing")
	fl.StringVar(&orphans.configPath, "config", "", "with --orphans: JSON file listing extra providers, as for serve")
	return cmd
}

func printRuns(cmd *cobra.Command, stateDir string) error {
	runs, err := cloudstate.ListRuns(stateDir)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "RUN\tSTARTED\tENDED\tAPI HOST\tCREATED\tMAY EXIST")
	for _, r := range runs {
		ended := "no (interrupted or running)"
		if r.EndedAt != nil {
			ended = r.EndedAt.Format(time.RFC3339)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%d\n", r.RunID, r.StartedAt.Format(time.RFC3339), ended, r.APIHost, len(r.Sandboxes), r.Alive())
	}
	return w.Flush()
}

// orphanSweepConfig is what the --orphans flags map to.
type orphanSweepConfig struct {
	enabled    bool
	instance   string
	dryRun     bool
	configPath string
}

// runOrphanSweep destroys (or, dry, lists) the sandboxes tagged with a dead
// server instance's ID, at every provider with credentials.
func runOrphanSweep(cmd *cobra.Command, cfg orphanSweepConfig, getenv func(string) string) error {
	instance := cfg.instance
	if instance == "" {
		instance = strings.TrimSpace(getenv(serveInstanceEnv))
	}
	if instance == "" {
		return fmt.Errorf("--orphans needs the instance ID: --instance ID or $%s", serveInstanceEnv)
	}
	if err := server.ValidateInstance(instance); err != nil {
		return err
	}
	platform, err := serveRealPlatform(cfg.configPath, getenv, sandbox.DefaultRequestTimeout)
	if err != nil {
		return err
	}
	rep, err := server.SweepOrphans(cmd.Context(), platform, instance, &server.SweepOptions{DryRun: cfg.dryRun, RetryFor: 30 * time.Second})
	if rep != nil {
		out := cmd.OutOrStdout()
		if cfg.dryRun {
			for _, id := range rep.Found {
				fmt.Fprintf(out, "would destroy %s\n", id)
			}
			fmt.Fprintf(out, "instance %s: %d tagged sandboxes found (dry run: none destroyed)\n", instance, len(rep.Found))
			return err
		}
		for _, id := range rep.Destroyed {
			fmt.Fprintf(out, "destroyed %s\n", id)
		}
		for _, id := range rep.AlreadyGone {
			fmt.Fprintf(out, "already gone %s\n", id)
		}
		for _, id := range slices.Sorted(maps.Keys(rep.Failed)) {
			fmt.Fprintf(out, "NOT destroyed %s (%s)\n", id, rep.Failed[id])
		}
		for _, where := range slices.Sorted(maps.Keys(rep.ListFailed)) {
			fmt.Fprintf(out, "NOT listed %s (%s)\n", where, rep.ListFailed[where])
		}
		fmt.Fprintf(out, "instance %s: %d destroyed, %d already gone, %d failed\n", instance, len(rep.Destroyed), len(rep.AlreadyGone), len(rep.Failed))
	}
	return err
}
