package main

import (
	"errors"
	"fmt"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxkit/sandboxkit/conformance"
)

// newSweepCommand destroys what an interrupted cloud run left behind.
func newSweepCommand() *cobra.Command {
	var (
		opts conformance.SweepOptions
		list bool
	)
	cmd := &cobra.Command{
		Use:   "sweep --run ID",
		Short: "Destroy the sandboxes an interrupted cloud run left behind",
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

Examples:
  sandboxkit sweep --list
  sandboxkit sweep --run 20261202T170744Z-1a2b3c4d`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if list {
				return printRuns(cmd, opts.StateDir)
			}
			if opts.RunID == "" {
				return errors.New("--run ID is required (sweeping is per run); --list shows the runs")
			}
			res, err := conformance.Sweep(cmd.Context(), &opts)
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
	return cmd
}

func printRuns(cmd *cobra.Command, stateDir string) error {
	runs, err := conformance.ListRuns(stateDir)
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
