package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2/reporters"
	"github.com/onsi/ginkgo/v2/types"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sandboxkit/sandboxkit/conformance"
	"github.com/sandboxkit/sandboxkit/fakeprovider"
)

// Default process counts of a parallel run: the specs mostly wait (on
// deadlines, timeouts and commands in the fake), so more processes than
// cores still gain. Against the in-process reference server with in-memory
// sandboxes a process costs a fake and a server of its own and little CPU
// while its specs wait: six let the short specs run beside the long
// waiting ones (hang, drip, command timeouts), where four left the CPU half
// idle. A stdio command starts a server process per session, and real
// sandboxes run real processes: those keep four.
const (
	defaultProcs          = 4
	defaultInProcessProcs = 6
)

// parallelBlocker says why the run must stay in one process, or "".
// Processes share nothing: each serves its own fake and starts its own
// server, so only targets that the kit starts per run or per session
// (in-process, a stdio command) split, and only outputs that merge.
func (f *conformFlags) parallelBlocker() string {
	switch {
	case f.cloud:
		return "cloud mode keeps one state file"
	case f.run.EvidenceDir != "":
		return "one evidence bundle needs one process"
	case f.run.DryRun:
		return "a dry run"
	case f.serverURL != "":
		return "an HTTP server is shared by every process"
	case f.fakeAddr != "127.0.0.1:0" || f.fakeAPIKey != "":
		return "a fixed fake address or key is for one fake"
	case f.e2b1 == string(fakeprovider.E2B1Debug):
		return "the e2b 1.x debug endpoints are fixed ports, for one fake"
	}
	return ""
}

// claimIn returns the claim of a process of a parallel run: a spec is this
// process's when it is the first to create the spec's file in dir (an
// exclusive create: exactly one process wins each spec). The file holds the
// process's ID, so that the parent can name the spec a crashed process was
// running.
func claimIn(dir string) func(specID string) bool {
	return func(specID string) bool {
		f, err := os.OpenFile(filepath.Join(dir, specID), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return false
		}
		_, _ = f.WriteString(strconv.Itoa(os.Getpid()))
		_ = f.Close()
		return true
	}
}

// specIDLabel matches a spec ID among a spec's labels.
var specIDLabel = regexp.MustCompile(`^[a-z]+\.[a-z0-9-]+$`)

// unfinishedClaims returns the specs the process pid claimed in dir that no
// process reported run: those it was running when it ended.
func unfinishedClaims(dir string, pid int, merged types.Report) []string {
	ran := map[string]bool{}
	for _, sr := range merged.SpecReports {
		if isClaimSkip(sr) {
			continue
		}
		for _, l := range sr.Labels() {
			if specIDLabel.MatchString(l) {
				ran[l] = true
			}
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var ids []string
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err == nil && string(data) == strconv.Itoa(pid) && !ran[e.Name()] {
			ids = append(ids, e.Name())
		}
	}
	return ids
}

// childArgs rebuilds the command line of one shard from the flags the user
// set, without those the parent handles itself (reports, procs).
func childArgs(fl *pflag.FlagSet, claimDir, jsonReport string) []string {
	args := []string{"conform"}
	fl.Visit(func(f *pflag.Flag) {
		switch f.Name {
		case "procs", "claim-dir", "junit-report", "json-report":
			return
		}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				args = append(args, "--"+f.Name+"="+v)
			}
			return
		}
		args = append(args, "--"+f.Name+"="+f.Value.String())
	})
	return append(args, "--procs=1", "--claim-dir="+claimDir, "--json-report="+jsonReport)
}

// shardResult is what one shard process left.
type shardResult struct {
	out     bytes.Buffer
	err     error
	state   *os.ProcessState
	reports []types.Report
	// unfinished are the specs the process claimed and left without a
	// result: the spec it was running when it crashed.
	unfinished []string
}

// runParallel runs the selected specs in procs processes of this binary,
// which share them as they go: each runs, in catalog order, the specs that
// no other process has claimed yet (conformance.RunOptions.Claim). Then it
// prints their output in order and the merged summary, and writes the
// merged JUnit and JSON reports. Hand-written: Ginkgo's own
// parallel runner lives in its CLI, which a `go run` command cannot use.
func runParallel(cmd *cobra.Command, f *conformFlags, cfg *conformance.Config, procs int) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("parallel run: cannot find this program: %w", err)
	}
	dir, err := os.MkdirTemp("", "sandboxkit-conform-")
	if err != nil {
		return fmt.Errorf("parallel run: %w", err)
	}
	defer os.RemoveAll(dir)
	claims := filepath.Join(dir, "claims")
	if err := os.Mkdir(claims, 0o700); err != nil {
		return fmt.Errorf("parallel run: %w", err)
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), f.run.Timeout+time.Minute)
	defer cancel()
	start := time.Now()
	results := make([]*shardResult, procs)
	var wg sync.WaitGroup
	for i := range procs {
		r := &shardResult{}
		results[i] = r
		report := filepath.Join(dir, fmt.Sprintf("process-%d.json", i))
		c := exec.CommandContext(ctx, exe, childArgs(cmd.Flags(), claims, report)...)
		c.Stdout, c.Stderr = &r.out, &r.out
		wg.Go(func() {
			r.err = c.Run()
			r.state = c.ProcessState
			if data, err := os.ReadFile(report); err == nil {
				if err := json.Unmarshal(data, &r.reports); err != nil {
					r.reports = nil
				}
			}
		})
	}
	wg.Wait()
	stdout := cmd.OutOrStdout()
	merged, ok := mergeReports(results, time.Since(start))
	conformance.InCatalogOrder(merged.SpecReports) // the processes ran the long specs first
	merged = conformance.Conclude(merged)
	for _, r := range results {
		if r.state != nil {
			r.unfinished = unfinishedClaims(claims, r.state.Pid(), merged)
		}
	}
	conformance.WriteBanner(stdout, merged)
	details, err := writeDetails(stdout, f, results)
	if err != nil {
		return err
	}
	conformance.WriteSummary(stdout, merged)
	// The processes' own verdicts count no baseline across processes: the
	// outcome is decided once, on the merged report.
	verdict := conformance.VerdictOf(merged, conformance.WriteOutcome(stdout, merged, cfg))
	if err := shardExits(results); err != nil {
		fmt.Fprintf(stdout, "RUN ERROR %v\n", err)
		ok = false
	}
	if !ok {
		verdict = conformance.VerdictFail
	}
	conformance.WriteVerdict(stdout, verdict)
	fmt.Fprintf(stdout, "%d processes, %v\n", procs, merged.RunTime.Round(10*time.Millisecond))
	fmt.Fprintf(stdout, "%s: %s\n", detailsNote, details)
	var errs []error
	if f.run.JUnitReport != "" {
		errs = append(errs, reporters.GenerateJUnitReport(merged, f.run.JUnitReport))
	}
	if f.run.JSONReport != "" {
		errs = append(errs, reporters.GenerateJSONReport(merged, f.run.JSONReport))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("parallel run: reports: %w", err)
	}
	return verdictExit(verdict)
}

// mergeReports joins the processes' Ginkgo reports into one, and reports
// whether every process ran and left its report, and no spec was left
// unrun (whether the specs passed is conformance.WriteOutcome's to say). Each spec appears once: from the
// process that ran it, or (skipped by the selection) from the first.
func mergeReports(results []*shardResult, took time.Duration) (types.Report, bool) {
	var merged types.Report
	ok := true
	succeeded := true // every process's suite succeeded, as Ginkgo sees it
	type key struct {
		typ  types.NodeType
		text string
	}
	seen := map[key]int{} // index in merged.SpecReports
	for _, r := range results {
		if len(r.reports) == 0 {
			ok = false
		}
		for _, rep := range r.reports {
			if merged.SuiteDescription == "" {
				merged = rep
				merged.SpecReports = nil
				merged.SpecialSuiteFailureReasons = nil
				merged.PreRunStats = types.PreRunStats{TotalSpecs: rep.PreRunStats.TotalSpecs}
				merged.SuiteSucceeded = true
			}
			succeeded = succeeded && rep.SuiteSucceeded
			merged.SpecialSuiteFailureReasons = append(merged.SpecialSuiteFailureReasons, rep.SpecialSuiteFailureReasons...)
			for _, sr := range rep.SpecReports {
				claimed := sr.State.Is(types.SpecStateSkipped) && sr.Failure.Message == conformance.ClaimedElsewhere
				k := key{sr.LeafNodeType, sr.FullText()}
				switch i, dup := seen[k]; {
				case !dup:
					seen[k] = len(merged.SpecReports)
					merged.SpecReports = append(merged.SpecReports, sr)
				case !claimed && isClaimSkip(merged.SpecReports[i]):
					merged.SpecReports[i] = sr
				}
			}
			if rep.EndTime.After(merged.EndTime) {
				merged.EndTime = rep.EndTime
			}
			if merged.StartTime.IsZero() || rep.StartTime.Before(merged.StartTime) {
				merged.StartTime = rep.StartTime
			}
		}
	}
	for _, sr := range merged.SpecReports {
		if sr.LeafNodeType == types.NodeTypeIt && !sr.State.Is(types.SpecStateSkipped|types.SpecStatePending) {
			merged.PreRunStats.SpecsThatWillRun++
		}
		if isClaimSkip(sr) {
			// No process ran it: a process ended early.
			ok = false
		}
	}
	merged.SuiteSucceeded = ok && succeeded
	merged.RunTime = took
	return merged, ok
}

// isClaimSkip reports whether a spec was skipped only because another
// process claimed it.
func isClaimSkip(sr types.SpecReport) bool {
	return sr.State.Is(types.SpecStateSkipped) && sr.Failure.Message == conformance.ClaimedElsewhere
}

// shardExits returns a run error naming each process of a parallel run
// that did not exit with status 0, or nil. A process exits 0 whenever it
// ran its share to the end, whatever its specs did (the parent judges the
// merged report), so any other ending (a status, a signal, a process that
// could not start) is a crash, even after it wrote its report.
func shardExits(results []*shardResult) error {
	var errs []error
	for i, r := range results {
		switch {
		case r.state != nil && r.state.Success() && r.err == nil:
			continue
		case r.state != nil:
			errs = append(errs, fmt.Errorf("process %d of %d ended abnormally (%s)%s", i+1, len(results), r.state, reportNote(r)))
		default:
			errs = append(errs, fmt.Errorf("process %d of %d did not run: %w", i+1, len(results), r.err))
		}
	}
	return errors.Join(errs...)
}

// reportNote says whether a crashed process had left its report first.
func reportNote(r *shardResult) string {
	if len(r.reports) > 0 {
		return ", after it wrote its report: its results may be incomplete"
	}
	return ", and left no report"
}

// unfinishedNote names the specs a crashed process left without a result.
func unfinishedNote(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	return " while it ran " + strings.Join(ids, ", ") + " (no result for it)"
}

// writeDetails writes every process's own output (Ginkgo's full block for
// each failed spec, with its transcript and the server's log) to the
// details file, and with --verbose to the console too; the console gets
// the end of the output of each process that crashed. It returns the
// file's path.
func writeDetails(stdout io.Writer, f *conformFlags, results []*shardResult) (string, error) {
	file, err := openDetails(f)
	if err != nil {
		return "", err
	}
	for i, r := range results {
		head := fmt.Sprintf("--- process %d of %d\n", i+1, len(results))
		fmt.Fprint(file, head)
		_, _ = file.Write(r.out.Bytes())
		if f.run.Verbose {
			fmt.Fprint(stdout, head)
			_, _ = stdout.Write(r.out.Bytes())
		} else if r.state == nil || !r.state.Success() || len(r.reports) == 0 {
			fmt.Fprintf(stdout, "--- process %d of %d ended abnormally or left no report%s; the end of its output:\n%s",
				i+1, len(results), unfinishedNote(r.unfinished), lastLines(r.out.String(), 15))
		}
	}
	if err := file.Close(); err != nil {
		return "", fmt.Errorf("details file: %w", err)
	}
	return file.Name(), nil
}

// shardGCPercent is the garbage collector's target of a parallel run's
// process when GOGC is not set: the kit's specs allocate large transient
// buffers (then a 22 MB upload and 40 MiB provider bodies, since 5.6 MB and
// 5 MiB against the in-process server; 2 MiB round trips), and
// at the default 100 the collector took about a tenth of the run's CPU
// time. At 300, a whole in-process run took 11% less CPU (19.0 s against
// 21.3 s, load 25) and the largest process peaked at 526 MB against 355
// MB; 200 is between.
const shardGCPercent = 200

// tuneShardGC sets the garbage collector's target of a parallel run's
// process, unless the user set GOGC. Not through the environment: the
// server commands the process starts inherit it.
func tuneShardGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(shardGCPercent)
	}
}
