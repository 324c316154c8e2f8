package conformance

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/reporters"
	"github.com/onsi/ginkgo/v2/types"
	"github.com/onsi/gomega"

	"github.com/sandboxkit/sandboxkit/conformance/internal/record"
	"github.com/sandboxkit/sandboxkit/conformance/internal/summary"
	"github.com/sandboxkit/sandboxkit/evidence"
)

// RunOptions select specs and reports for [RunWith]. Zero values keep
// Ginkgo's own configuration (from its -ginkgo.* flags when under go test).
type RunOptions struct {
	// LabelFilter is a Ginkgo label query, e.g. "bounds && !needs-fake".
	LabelFilter string
	// Focus and Skip are regular expressions over spec texts.
	Focus, Skip []string
	// JUnitReport and JSONReport are paths for Ginkgo's reports.
	JUnitReport, JSONReport string
	// Verbose prints every spec as it runs.
	Verbose bool
	// FailFast stops at the first failure.
	FailFast bool
	// Timeout bounds the whole run.
	Timeout time.Duration
	// DryRun lists the selected specs without running them.
	DryRun bool
	// Verdict is set by the run when it ends: passed, failed, or
	// inconclusive (nothing failed, but specs could not be judged).
	Verdict Verdict
	// Summary receives the per-family summary; nil means os.Stdout.
	Summary io.Writer
	// Claim, when set, makes this run one of several processes that share
	// the catalog: each spec, when its turn comes, runs only if Claim(its
	// ID) returns true, and is otherwise skipped with [ClaimedElsewhere] as
	// its message. Claim must return true for each ID in exactly one of the
	// processes (the conform command claims with an exclusive file create),
	// so that the processes share the work as they go. Not with
	// EvidenceDir or Cloud.
	Claim func(specID string) bool
	// ProcessCommand, when set, is the reference server's command (the
	// "sandboxkit serve" of the same build, over stdio): a run whose target
	// is the in-process reference server starts it for the specs that need
	// a server process (Spec.Process: crash and restart, SIGTERM, provider
	// connections of its own), which are otherwise run in-process or, for
	// the crash spec, skipped. Ignored for other targets.
	ProcessCommand []string
	// EvidenceDir, when set, receives the run's evidence bundle (see package
	// evidence): mode "cloud" for a cloud run, "loopback" otherwise. It must
	// not exist or be empty. Everything in it is redacted first; a bundle
	// that would still hold a secret is not written and the run fails.
	EvidenceDir string
}

// ClaimedElsewhere is the skip message of a spec that another process of
// the same run claimed (see [RunOptions].Claim).
const ClaimedElsewhere = summary.ClaimedElsewhere

// Run runs the whole kit from a go test function:
//
//	func TestConformance(t *testing.T) { conformance.Run(t, conformance.NewConfig()) }
//
// Only one Run may be called per process (Ginkgo runs one suite per
// process). It reports whether no selected spec failed: a run whose
// specs passed or were inconclusive (not judged, see [Conclude]) returns
// true and leaves t alone; [RunOptions].Verdict tells the two apart.
func Run(t ginkgo.GinkgoTestingT, cfg *Config) bool { return RunWith(t, cfg, nil) }

// RunWith is [Run] with explicit spec selection and reports.
//
// The configuration is validated first, and the evidence directory, when
// one is given, must not exist or be empty; otherwise (in cloud mode also
// without provider credentials in the environment) RunWith fails t and
// returns false before any spec is registered or run. In cloud mode the
// label filter gains "!needs-fake", and the run's ID and state file are
// printed to the summary writer first.
func RunWith(t ginkgo.GinkgoTestingT, cfg *Config, opts *RunOptions) bool {
	return runKit(t, cfg, opts, testSeams{})
}

// runKit is [RunWith] with the kit's own tests' seams (none for a user).
func runKit(t ginkgo.GinkgoTestingT, cfg *Config, opts *RunOptions, seams testSeams) bool {
	if opts == nil {
		opts = &RunOptions{}
	}
	summary := opts.Summary
	if summary == nil {
		summary = os.Stdout
	}
	if err := checkStart(cfg, opts); err != nil {
		fmt.Fprintf(summary, "sandboxkit conformance: not started: %v\n", err)
		t.Fail()
		return false
	}
	run := newRun(cfg, seams)
	run.processCmd = opts.ProcessCommand
	if cfg.Cloud && !opts.DryRun {
		fmt.Fprintf(summary, "cloud run %s: every sandbox it creates is recorded in %s\n  if the run is killed: sandboxkit sweep --run %s --state-dir %s\n",
			run.id, filepath.Join(cfg.stateDir(), run.id+".json"), run.id, cfg.stateDir())
	}
	gomega.RegisterFailHandler(failHandler(run))
	var banner io.Writer
	if opts.Claim == nil {
		// A process of a parallel run leaves the banner to its parent,
		// which prints it once from the merged report (WriteBanner).
		banner = summary
	}
	describe(run, opts.Claim, banner)
	suiteCfg, repCfg := suiteConfig(cfg, opts)
	// The JUnit and JSON reports are written from the concluded report
	// (inconclusive specs and defects decided), not by Ginkgo.
	reports := reportFiles{junit: repCfg.JUnitReport, json: repCfg.JSONReport}
	repCfg.JUnitReport, repCfg.JSONReport = "", ""
	selection := selectionOf(suiteCfg)
	verdict := VerdictFail // set by the report, which every run that is not a dry run writes
	var evidenceErr error
	ginkgo.ReportAfterSuite("sandboxkit summary", func(r ginkgo.Report) {
		r = Conclude(r)
		if err := reports.write(r); err != nil {
			evidenceErr = err
			fmt.Fprintf(summary, "REPORTS NOT WRITTEN: %v\n", err)
		}
		if opts.DryRun {
			return
		}
		WriteSummary(summary, r)
		verdict = VerdictOf(r, WriteOutcome(summary, r, cfg))
		WriteVerdict(summary, verdict)
		run.writeCloudSummary(summary)
		if opts.EvidenceDir == "" {
			return
		}
		// The run is over: its bundle is built once, from what it was.
		if mode, err := record.Write(opts.EvidenceDir, run.evidence(r, selection)); err != nil {
			evidenceErr = err
			fmt.Fprintf(summary, "EVIDENCE NOT WRITTEN: %v\n", err)
		} else {
			fmt.Fprintf(summary, "evidence bundle (%s) written to %s\n", mode, evidenceDirAbs(opts.EvidenceDir))
		}
	})
	// Ginkgo fails its T at any failed spec; the run's outcome is decided
	// by WriteOutcome, which honours the baseline (expected failures) and
	// the run's findings.
	ok := ginkgo.RunSpecs(&outcomeT{}, "sandboxkit conformance", suiteCfg, repCfg)
	if opts.DryRun && ok {
		verdict = VerdictPass
	}
	if evidenceErr != nil || len(run.cleanupFailures()) > 0 {
		verdict = VerdictFail
	}
	opts.Verdict = verdict
	if verdict == VerdictFail {
		t.Fail()
		return false
	}
	return true
}

// reportFiles are the paths of the run's JUnit and JSON reports.
type reportFiles struct{ junit, json string }

// write writes the reports of a concluded report.
func (f reportFiles) write(r ginkgo.Report) error {
	var errs []error
	if f.junit != "" {
		errs = append(errs, reporters.GenerateJUnitReport(r, f.junit))
	}
	if f.json != "" {
		errs = append(errs, reporters.GenerateJSONReport(r, f.json))
	}
	return errors.Join(errs...)
}

// WriteVerdict prints, for an inconclusive run, the line that says what
// it means; nothing otherwise.
func WriteVerdict(w io.Writer, v Verdict) {
	if v == VerdictInconclusive {
		fmt.Fprintln(w, "verdict: INCONCLUSIVE: no spec failed, but some could not be judged against the fake (listed above); not a pass")
	}
}

// checkStart refuses a run that cannot start: an invalid configuration, an
// evidence directory that is not empty, or a shared run that would write
// evidence or go to the cloud.
func checkStart(cfg *Config, opts *RunOptions) error {
	err := cfg.Validate()
	if err == nil && opts.EvidenceDir != "" && !opts.DryRun {
		err = evidence.CheckDir(opts.EvidenceDir)
	}
	if err == nil && opts.Claim != nil && (opts.EvidenceDir != "" || cfg.Cloud) {
		err = errors.New("a run that shares its specs with other processes writes no evidence and never runs in cloud mode: one bundle and one state file need one process")
	}
	return err
}

// failHandler is Ginkgo's Fail, which in a cloud run first redacts what the
// run saw: failure messages of a cloud run reach consoles and reports that
// may be shared, as its bundle is redacted.
func failHandler(run *runState) func(message string, callerSkip ...int) {
	if !run.cfg.Cloud {
		return ginkgo.Fail
	}
	return func(message string, callerSkip ...int) {
		skip := 1
		if len(callerSkip) > 0 {
			skip += callerSkip[0]
		}
		ginkgo.Fail(run.redact(message), skip)
	}
}

// suiteConfig is Ginkgo's configuration (from its -ginkgo.* flags under go
// test) with the run's options applied; cloud mode leaves out the specs
// that need the fake.
func suiteConfig(cfg *Config, opts *RunOptions) (types.SuiteConfig, types.ReporterConfig) {
	suiteCfg, repCfg := ginkgo.GinkgoConfiguration()
	if opts.LabelFilter != "" {
		suiteCfg.LabelFilter = opts.LabelFilter
	}
	if cfg.Cloud {
		if suiteCfg.LabelFilter == "" {
			suiteCfg.LabelFilter = "!" + LabelNeedsFake
		} else {
			suiteCfg.LabelFilter = "(" + suiteCfg.LabelFilter + ") && !" + LabelNeedsFake
		}
	}
	suiteCfg.FocusStrings = append(suiteCfg.FocusStrings, opts.Focus...)
	suiteCfg.SkipStrings = append(suiteCfg.SkipStrings, opts.Skip...)
	suiteCfg.FailFast = suiteCfg.FailFast || opts.FailFast
	suiteCfg.DryRun = suiteCfg.DryRun || opts.DryRun
	if opts.Timeout > 0 {
		suiteCfg.Timeout = opts.Timeout
	}
	if opts.JUnitReport != "" {
		repCfg.JUnitReport = opts.JUnitReport
	}
	if opts.JSONReport != "" {
		repCfg.JSONReport = opts.JSONReport
	}
	repCfg.Verbose = repCfg.Verbose || opts.Verbose
	if !isTerminal(os.Stdout) {
		// Escape codes only garble a log file or a CI page.
		repCfg.NoColor = true
	}
	return suiteCfg, repCfg
}

// selectionOf is what the run selected, for its evidence.
func selectionOf(suiteCfg types.SuiteConfig) map[string]any {
	selection := map[string]any{"label_filter": suiteCfg.LabelFilter}
	if len(suiteCfg.FocusStrings) > 0 {
		selection["focus"] = suiteCfg.FocusStrings
	}
	if len(suiteCfg.SkipStrings) > 0 {
		selection["skip"] = suiteCfg.SkipStrings
	}
	return selection
}

// outcomeT records Ginkgo's verdict without passing it on: RunWith
// decides.
type outcomeT struct{ failed bool }

// Fail records that a spec failed.
func (t *outcomeT) Fail() { t.failed = true }

// WriteSummary prints passed/failed/skipped per family, the failures
// grouped by first cause (one line for a cause that one spec met, the
// cause and the specs it affected for one that several met), why specs
// were skipped, how the server processes the kit started ended, and the
// rule coverage.
func WriteSummary(w io.Writer, r ginkgo.Report) { summary.Write(w, r, catalog()) }

// catalog is what the summary knows of the kit's catalog.
func catalog() summary.Catalog {
	cat := summary.Catalog{Families: familyNames(), Tools: ContractTools()}
	for _, r := range Rules() {
		cat.Rules = append(cat.Rules, r.ID)
	}
	cat.SpecRules = map[string][]string{}
	for _, s := range Specs() {
		for _, era := range specEras(s) {
			cat.SpecRules[runID(s.ID, era)] = s.Rules
		}
	}
	return cat
}

// familyNames are the families' labels in report order.
func familyNames() []string {
	var names []string
	for _, f := range Families() {
		names = append(names, string(f))
	}
	return names
}

// classify reads a spec's family, ID and rule labels.
func classify(labels []string) (Family, string, []string) {
	fam, id, rules := summary.Catalog{Families: familyNames()}.Classify(labels)
	return Family(fam), id, rules
}

// isTerminal reports whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
