package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"mvdan.cc/sh/v3/shell"

	"github.com/sandboxkit/sandboxkit/conformance"
	"github.com/sandboxkit/sandboxkit/conformance/cloudstate"
)

// conformFlags are the conform command's flags.
type conformFlags struct {
	exec        execFlags // --exec, --rootfs: conform_exec.go
	serverCmd   string
	serverEnv   []string
	serverURL   string
	headers     []string
	secondToken string
	// serverPolicies: what the server declares (conform_policies.go).
	serverPolicies conformance.Policies
	fakeAddr       string
	fakeAPIKey     string
	toolMap        string
	profile        string
	expected       string
	requireAll     bool
	callTimeout    time.Duration
	deadline       time.Duration
	crashBound     time.Duration
	idleTimeout    time.Duration
	list           bool
	cloud          bool
	stateDir       string
	runID          string
	procs          int
	claimDir       string
	detailsFile    string
	runFolder      string // where outputs without a path go (resolveOutputs)
	cpuProfile     string // --cpuprofile (conform_profile.go)

	run conformance.RunOptions

	// --e2b1 and --e2b1-debug-addrs (conform_e2b1.go)
	e2b1, e2b1Addrs string
}

// newConformCommand runs the conformance kit.
func newConformCommand() *cobra.Command {
	f := &conformFlags{}
	cmd := &cobra.Command{
		Use:   "conform",
		Short: "Run the conformance kit against an MCP server",
		Long: `conform runs the conformance kit: Ginkgo specs, each tied to rules of the
sandbox tool contract, that drive an MCP server against an in-memory fake
E2B-compatible provider.

Targets:
  (default)                 the reference server, in-process
  --server-cmd "CMD ARGS"   a stdio server, started once per session
  --server-url URL          a Streamable HTTP endpoint; with --server-cmd the kit
                            starts the command first, otherwise it must be running

A server in another process reaches the fake through its environment: the kit
serves the fake on loopback (--fake-addr) and sets E2B_API_URL, E2B_API_KEY,
E2B_DOMAIN and E2B_SANDBOX_URL for the commands it starts. Do not start the
reference server with "serve --fake": it then talks to its own embedded fake,
ignores the kit's, and most specs fail (conform warns). For a server that
is already running, start it with those variables pointing at a fixed
--fake-addr and --fake-api-key.

The deadline specs (errors.hang, errors.drip, errors.oversized) make the
provider hang, drip or send an oversized body on every tool's platform call and
expect a categorized tool error within the server's provider deadline plus a
grace (half of it, plus a slack measured on the server in the same run). Tell the kit that deadline with
--provider-deadline, and start the server with it: for the reference server,
"serve --provider-timeout 2s --file-timeout 2s". Without it they are skipped
for a server in another process (failed with --require-all). The in-process
reference server gets 2s; for errors.hang and errors.drip, which wait the
deadline out, a reference server of their own gets 100 no-op round trips
measured at the spec's start (at least 1s, at most 2s).

Parallel processes: the specs mostly wait, so the kit runs them in --procs
processes of itself (default 6 in-process, 4 for a --server-cmd or --exec
namespace), each with its own fake provider and its own
server (in-process, or the --server-cmd it starts), which share the specs as
they go; the summary and the JUnit and JSON reports are merged. Runs that
cannot split use one process: --cloud, --evidence-dir, --dry-run,
--server-url (one server for every process), a fixed --fake-addr or
--fake-api-key. --procs 1 runs every spec in turn in this process.

Output: the run opens with the tools found, mapped (--tool-map) and missing,
and closes with the summary: failures grouped by first cause (a cause several
specs share is printed once, with the specs), why specs were skipped, and how
the stdio server's processes ended (exited on EOF, needed SIGTERM, killed).
The console holds only that report; Ginkgo's full output (each failed spec's
block, with its transcript and the server's log) goes to a details file the
last line names (--details-file; by default details.log in the run folder,
$XDG_CACHE_HOME/sandboxkit/runs/RUN-ID, or the platform's user cache
directory), or with --verbose to the console. --junit-report without a path
writes junit.xml there too; the run keeps the last 20 run folders. The JUnit and JSON reports are unchanged. A process of a parallel
run that ends other than with status 0 is a run error naming it.
Against the fake every spec ends with a leak check that needs no tool names:
a sandbox the spec's sessions created that still runs after they closed and
the settle time fails the spec once as SESSION-1, with its ID and the call
during which it appeared.

The crash spec (cleanup.crash-restart-sweeps) runs only for a stdio server
command: the kit starts it with SANDBOXKIT_INSTANCE set, makes it own two
sandboxes, kills it with SIGKILL, starts it again with the same variable and
expects both sandboxes destroyed within --crash-bound of the kill, and an
external sandbox untouched. Without --server-cmd and --server-url, the specs
that need a server process (the crash spec, cleanup.shutdown's SIGTERM,
delegation.by-id-releases-connections' own provider connections) run against
this program as "serve" over stdio, on the same fake; the banner says so.

Cloud mode (--cloud) runs the kit against the real provider that the
environment names instead of the fake: E2B_API_KEY is required (the run
refuses to start without it), E2B_API_URL, E2B_DOMAIN and E2B_SANDBOX_URL are
honoured. Only specs that need no fault injection run, plus cloud-only specs
that cross-check the server against the platform through the kit's own SDK.
Every sandbox the run creates is recorded in a state file (--state-dir) the
moment its ID is seen and destroyed at the end, even when specs fail; after
an interrupted run, "sandboxkit sweep --run ID" destroys what it left.

Every result of every spec is also read as the official MCP clients read it
(TOOLS-5): a success must carry structuredContent and any structuredContent,
on a tool error too, must match the tool's outputSchema, both as draft-07 with
formats asserted (Ajv in the TypeScript SDK) and as JSON Schema 2020-12. A
result that fails fails the spec that made the call. Tool errors are read
from their text block ({"error": {...}}, ERR-2).

Servers of other designs: --tool-map FILE adapts the server's tools (names,
argument names, units, where a result's values are: structuredContent, JSON in
the text block, or a pattern); a success without structuredContent is read
from its text block and reported once, as a TOOLS-3 finding. --profile NAME
declares the server's design (contract, explicit-ids, one-shot): specs of
rules that do not apply read "not applicable", with the reason, and are not
failures. --expected-failures FILE is a CI baseline: a mapping of spec or rule
IDs to the reason each is expected to fail; the run passes when exactly those
fail, and names any that now pass so the file can shrink.

--evidence-dir DIR writes an evidence bundle of the run (mode cloud or
loopback) to DIR: check it with "sandboxkit evidence verify DIR".

Examples:
  sandboxkit conform
  sandboxkit conform --server-cmd "python -m my_server" --require-all
  sandboxkit conform --server-cmd "sandboxkit serve --provider-timeout 2s --file-timeout 2s" --provider-deadline 2s
  sandboxkit conform --server-cmd "./srv --http 127.0.0.1:9000" --server-url http://127.0.0.1:9000/mcp
  sandboxkit conform --label-filter 'bounds || leakage' --junit-report
  sandboxkit conform --server-cmd "node srv.js" --tool-map map.json --profile explicit-ids --expected-failures baseline.yaml
  sandboxkit conform --list
  E2B_API_KEY=e2b_... sandboxkit conform --cloud --evidence-dir evidence/records/e2b/$(date -u +%F)

Inconclusive specs: a spec the kit cannot judge against the fake (its calls
never reached the fake, or went to a sandbox port it does not serve; the
fault it injected was never met; the server did not start a session) is
INCONCLUSIVE, not failed: counted on its own in the summary, skipped with a
message that begins with "INCONCLUSIVE" in the JUnit and JSON reports. A
defect it saw on the way (a secret, URL or raw provider error in a tool
result, a sandbox left running, a call that acted on another sandbox than
the one it named) still fails it, with only those defects.

The exit status is 0 when every selected spec passed and nothing was found
(with --expected-failures: when exactly the expected ones failed); 2 when
nothing failed but some specs were inconclusive; 1 otherwise (a failure, a
finding, a run that could not start, or a usage error).`,
		Args: func(_ *cobra.Command, args []string) error { return f.reportArgs(args) },
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.list {
				return printCatalog(cmd)
			}
			cfg, err := f.config()
			if err != nil {
				return err
			}
			stopProfile, err := startCPUProfile(f.cpuProfile, f.claimDir != "")
			if err != nil {
				return err
			}
			defer stopProfile()
			f.run.ProcessCommand = f.referenceCommand()
			if f.claimDir == "" {
				warnServerCmd(cmd.ErrOrStderr(), cfg.ServerCommand, f.cloud)
				if cfg.RunID == "" {
					cfg.RunID = cloudstate.NewRunID()
				}
				if err := f.resolveOutputs(cfg.RunID); err != nil {
					return err
				}
				defer f.noteReports(cmd.OutOrStdout())
			}
			f.run.Summary = cmd.OutOrStdout()
			if f.claimDir != "" {
				// One process of a parallel run: the parent prints the summary.
				tuneShardGC()
				f.run.Claim = claimIn(f.claimDir)
				f.run.Summary = io.Discard
			} else if procs, err := f.processes(cmd); err != nil {
				return err
			} else if procs > 1 {
				return runParallel(cmd, f, cfg, procs)
			}
			ok, err := f.runSerial(cmd, cfg)
			if err != nil {
				return err
			}
			if f.claimDir != "" {
				// A process of a parallel run that ran its share to the
				// end exits 0 whatever its specs did: the parent judges the
				// merged report, and takes any other ending for a crash.
				return nil
			}
			if !ok {
				return exitFailed
			}
			return verdictExit(f.run.Verdict)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.serverCmd, "server-cmd", "", "command (with arguments, shell-quoted) that starts the server under test")
	fl.StringArrayVar(&f.serverEnv, "server-env", nil, "KEY=value added to the server command's environment (repeatable)")
	fl.StringVar(&f.serverURL, "server-url", "", "Streamable HTTP endpoint of the server under test")
	fl.StringArrayVar(&f.headers, "header", nil, `"Name: value" header sent to --server-url (repeatable)`)
	addPolicyFlags(fl, &f.serverPolicies)
	fl.StringVar(&f.secondToken, "second-token-file", "", "file holding the bearer token of a second principal of --server-url (HANDLE-1: one principal's handles are not_found to the other; HANDLE-4: nor does its session ID reach the other's session); the first is --header's Authorization")
	f.exec.add(fl)
	fl.StringVar(&f.fakeAddr, "fake-addr", "127.0.0.1:0", "loopback address of the fake provider for servers in other processes")
	fl.StringVar(&f.fakeAPIKey, "fake-api-key", "", "API key the fake accepts (default: random per run)")
	addE2B1Flags(fl, &f.e2b1, &f.e2b1Addrs)
	fl.StringVar(&f.toolMap, "tool-map", "", `JSON file adapting the server's tools to the contract's: names ({"run_command": "exec"}), argument names and units, and where results are (see conformance/README.md)`)
	fl.StringVar(&f.profile, "profile", "", "the design the server follows: contract (the default: sessions with a default sandbox), explicit-ids (no default: every call names its sandbox) or one-shot (a single run_code tool); specs that do not apply are reported not applicable (--require-all runs them all)")
	fl.StringVar(&f.expected, "expected-failures", "", "YAML or JSON file of spec or rule IDs expected to fail, each with a reason: the run passes when exactly those fail, and names any that now pass")
	fl.BoolVar(&f.requireAll, "require-all", false, "fail, rather than skip, the specs of tools the server does not advertise (certification)")
	fl.DurationVar(&f.callTimeout, "call-timeout", 30*time.Second, "bound on each MCP request and session start; each spec is bounded by 4 times it (at least 2 minutes), its cleanup by twice it (at least 1)")
	fl.DurationVar(&f.deadline, "provider-deadline", 0, "the server's own bound on one provider request, as it was started with (the reference server: serve --provider-timeout D --file-timeout D); the deadline specs need it for a server in another process (default: 2s for the in-process reference server, 10s with --exec namespace, unknown otherwise)")
	fl.DurationVar(&f.idleTimeout, "idle-timeout", 0, "the server's own idle timeout for a Streamable HTTP session, as it was started with (the reference server: serve --session-timeout D); spec cleanup.idle-timeout needs it for a server URL (default: 2s for the in-process reference server, unknown otherwise)")
	fl.DurationVar(&f.crashBound, "crash-bound", 0, "longest a stdio server command, killed with SIGKILL and started again with the same SANDBOXKIT_INSTANCE, may take to destroy what the dead process owned (spec cleanup.crash-restart-sweeps; default 30s)")
	fl.BoolVar(&f.list, "list", false, "print the spec catalog (ID, rules, title) and exit")
	fl.BoolVar(&f.cloud, "cloud", false, "run against the real provider named by the environment (E2B_API_KEY required); creates real sandboxes")
	fl.StringVar(&f.run.EvidenceDir, "evidence-dir", "", "write the run's evidence bundle to this directory (must not exist or be empty)")
	fl.StringVar(&f.stateDir, "state-dir", "", "directory of cloud runs' state files (default $XDG_STATE_HOME/sandboxkit/runs)")
	fl.StringVar(&f.runID, "run-id", "", "name of the run in its state file and evidence (default: time and a random suffix)")
	fl.StringVar(&f.run.LabelFilter, "label-filter", "", "Ginkgo label query over families, rule IDs and spec IDs, e.g. 'bounds && !LIST-3'")
	fl.StringArrayVar(&f.run.Focus, "focus", nil, "run only specs whose text matches this regular expression (repeatable)")
	fl.StringArrayVar(&f.run.Skip, "skip", nil, "skip specs whose text matches this regular expression (repeatable)")
	fl.StringVar(&f.run.JUnitReport, "junit-report", "", "write a JUnit XML report to this path (alone: junit.xml in the run folder)")
	fl.Lookup("junit-report").NoOptDefVal = junitInRunFolder
	fl.StringVar(&f.run.JSONReport, "json-report", "", "write a Ginkgo JSON report to this path")
	fl.BoolVarP(&f.run.Verbose, "verbose", "v", false, "print every spec as it runs, and Ginkgo's full output of each failed spec on the console")
	fl.StringVar(&f.detailsFile, "details-file", "", "write Ginkgo's full output (each failed spec with its transcript and the server's log) to this file (default: details.log in the run folder, under the user's cache directory)")
	fl.BoolVar(&f.run.FailFast, "fail-fast", false, "stop at the first failure")
	fl.DurationVar(&f.run.Timeout, "timeout", time.Hour, "bound on the whole run")
	fl.BoolVar(&f.run.DryRun, "dry-run", false, "walk the selected specs without running them")
	fl.IntVar(&f.procs, "procs", 0, fmt.Sprintf("processes that run the specs in parallel, each with its own fake and server (default %d for the in-process server with in-memory sandboxes, %d for stdio commands and real sandboxes, 1 otherwise)", defaultInProcessProcs, defaultProcs))
	fl.StringVar(&f.claimDir, "claim-dir", "", "internal: run as one process of a parallel run, claiming specs in this directory")
	_ = fl.MarkHidden("claim-dir")
	addProfileFlag(fl, &f.cpuProfile)
	cmd.SetHelpFunc(flagsFirstHelp)
	return cmd
}

// flagsFirstHelp prints a command's usage and flags before its long
// description, so that conform --help opens with what can be typed.
func flagsFirstHelp(cmd *cobra.Command, _ []string) {
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "%s\n\n%s", cmd.Short, cmd.UsageString())
	fmt.Fprintf(out, "\nDetails:\n\n%s\n", cmd.Long)
}

// warnServerCmd warns when a server command starts the reference server
// on its own embedded fake ("serve --fake"): such a server never talks to
// the kit's fake provider, so every spec that reads the fake's journal,
// injects a fault or checks the platform fails (86 of 148 in a run at
// the time of writing), which reads as a broken server rather than a wrong command.
func warnServerCmd(w io.Writer, command []string, cloud bool) {
	for _, arg := range command {
		if arg == "--fake" || strings.HasPrefix(arg, "--fake=") {
			what := "the kit's fake provider"
			if cloud {
				what = "the real provider"
			}
			fmt.Fprintf(w, "WARNING: --server-cmd contains %s: the server then uses its own embedded fake and ignores %s\n"+
				"(the E2B_* variables the kit sets), so most specs fail for that reason alone; drop %s from the command.\n", arg, what, arg)
			return
		}
	}
}

// noteReports names, at the end of a run, the JUnit report when conform
// chose its path (--junit-report without one).
func (f *conformFlags) noteReports(w io.Writer) {
	if f.run.JUnitReport != "" {
		fmt.Fprintf(w, "JUnit report: %s\n", f.run.JUnitReport)
	}
}

// processes is how many processes the run uses: --procs, or by default
// defaultInProcessProcs or defaultProcs where the run can split and 1 where
// it cannot.
func (f *conformFlags) processes(cmd *cobra.Command) (int, error) {
	blocker := f.parallelBlocker()
	if !cmd.Flags().Changed("procs") {
		if blocker != "" {
			return 1, nil
		}
		if f.serverCmd == "" && !f.exec.real() {
			return defaultInProcessProcs, nil
		}
		return defaultProcs, nil
	}
	switch {
	case f.procs < 1:
		return 0, fmt.Errorf("--procs %d: want at least 1", f.procs)
	case f.procs > 1 && blocker != "":
		return 0, fmt.Errorf("--procs %d: this run cannot be split (%s); use --procs 1", f.procs, blocker)
	}
	return f.procs, nil
}

// config maps the flags onto a kit configuration.
func (f *conformFlags) config() (*conformance.Config, error) {
	cfg := conformance.NewConfig()
	if f.serverCmd != "" {
		fields, err := shell.Fields(f.serverCmd, func(string) string { return "" })
		if err != nil || len(fields) == 0 {
			return nil, fmt.Errorf("--server-cmd: cannot split %q into a command and arguments", f.serverCmd)
		}
		cfg.ServerCommand = fields
	}
	cfg.ServerEnv = f.serverEnv
	cfg.ServerURL = f.serverURL
	if len(f.headers) > 0 {
		cfg.Headers = map[string]string{}
		for _, h := range f.headers {
			name, value, ok := strings.Cut(h, ":")
			if !ok {
				return nil, fmt.Errorf(`--header: want "Name: value", got a value without a colon`)
			}
			cfg.Headers[strings.TrimSpace(name)] = strings.TrimSpace(value)
		}
	}
	if f.secondToken != "" {
		data, err := os.ReadFile(f.secondToken)
		if err != nil {
			return nil, fmt.Errorf("--second-token-file: %w", err)
		}
		cfg.SecondToken = strings.TrimSpace(string(data))
	}
	cfg.FakeAddr = f.fakeAddr
	cfg.FakeAPIKey = f.fakeAPIKey
	cfg.RequireAll = f.requireAll
	cfg.Policies = f.serverPolicies
	cfg.CallTimeout = f.callTimeout
	cfg.ProviderDeadline = f.deadline
	cfg.CrashBound = f.crashBound
	cfg.IdleTimeout = f.idleTimeout
	cfg.Cloud = f.cloud
	cfg.StateDir = f.stateDir
	cfg.RunID = f.runID
	if err := f.applyE2B1(cfg); err != nil {
		return nil, err
	}
	if f.toolMap != "" {
		data, err := os.ReadFile(f.toolMap)
		if err != nil {
			return nil, fmt.Errorf("--tool-map: %w", err)
		}
		tools, err := conformance.ParseToolMap(data)
		if err != nil {
			return nil, fmt.Errorf("--tool-map %s: %w", f.toolMap, err)
		}
		cfg.Tools = tools
	}
	cfg.Profile = conformance.Profile(f.profile)
	fakeDaemon, err := f.exec.newDaemon(context.Background())
	if err != nil {
		return nil, err
	}
	cfg.FakeDaemon = fakeDaemon
	if f.expected != "" {
		data, err := os.ReadFile(f.expected)
		if err != nil {
			return nil, fmt.Errorf("--expected-failures: %w", err)
		}
		list, err := conformance.ParseExpectedFailures(data)
		if err != nil {
			return nil, fmt.Errorf("--expected-failures %s: %w", f.expected, err)
		}
		cfg.ExpectedFailures = list
	}
	if f.cloud && (f.fakeAPIKey != "" || f.fakeAddr != "127.0.0.1:0") {
		return nil, fmt.Errorf("--cloud uses no fake provider: drop --fake-addr and --fake-api-key")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// printCatalog lists every spec with its rules.
func printCatalog(cmd *cobra.Command) error {
	w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tFAMILY\tRULES\tTITLE")
	for _, s := range conformance.Specs() {
		title := s.Title
		switch {
		case s.NeedsFake:
			title += " [needs-fake]"
		case s.CloudOnly:
			title += " [cloud-only]"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", s.ID, s.Family, strings.Join(s.Rules, ","), title)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(cmd.OutOrStdout(), "\nChecked on every result of every spec (and a label of each): %s\n",
		strings.Join(conformance.EveryResultRules(), ", "))
	return err
}

// ginkgoT satisfies ginkgo.GinkgoTestingT outside go test.
type ginkgoT struct{ failed bool }

// Fail records that the suite failed.
func (t *ginkgoT) Fail() { t.failed = true }

// runSerial runs the kit in this process. Outside a parallel run's
// process and without --verbose, Ginkgo's output (a full block for every
// failed spec) goes to the details file, and the console keeps the kit's
// own short report.
func (f *conformFlags) runSerial(cmd *cobra.Command, cfg *conformance.Config) (bool, error) {
	t := &ginkgoT{}
	if f.claimDir != "" || f.run.Verbose || f.run.DryRun || cmd.OutOrStdout() != os.Stdout {
		return conformance.RunWith(t, cfg, &f.run), nil
	}
	file, err := openDetails(f)
	if err != nil {
		return false, err
	}
	defer file.Close()
	console, restore, err := divertStdout(file)
	if err != nil {
		// Ginkgo's output stays on the console.
		return conformance.RunWith(t, cfg, &f.run), nil
	}
	f.run.Summary = console
	ok := conformance.RunWith(t, cfg, &f.run)
	fmt.Fprintf(console, "%s: %s\n", detailsNote, file.Name())
	if err := restore(); err != nil {
		return false, err
	}
	return ok, nil
}
