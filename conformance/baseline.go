package conformance

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
	"go.yaml.in/yaml/v3"

	"github.com/sandboxkit/sandboxkit/conformance/internal/summary"
	"github.com/sandboxkit/sandboxkit/evidence"
)

// ExpectedFailure is one entry of a run's baseline: a spec ID (such as
// "errors.hang") or a rule ID (such as "TOOLS-3") expected to fail, and
// why. A rule entry covers every spec that carries the rule, and the
// run's findings of that rule.
type ExpectedFailure struct {
	ID     string
	Reason string
}

// ParseExpectedFailures reads a baseline file, YAML or JSON: a mapping of
// spec or rule IDs to the reason each is expected to fail, modelled on the
// --expected-failures YAML of the official MCP conformance suite, with a
// reason for each entry:
//
//	protocol.tools-list-shape: the server offers 6 of the 15 tools
//	TOOLS-3: results are JSON text blocks; structuredContent is planned
//
// Every problem is reported at once (an unknown ID, an empty reason).
func ParseExpectedFailures(data []byte) ([]ExpectedFailure, error) {
	var node yaml.Node
	if err := yaml.Unmarshal(data, &node); err != nil {
		return nil, fmt.Errorf("expected failures: not YAML or JSON: %w", err)
	}
	if len(node.Content) == 0 {
		return nil, errors.New("expected failures: the file is empty (want a mapping of spec or rule IDs to reasons)")
	}
	m := node.Content[0]
	if m.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("expected failures: line %d: want a mapping of spec or rule IDs to reasons", m.Line)
	}
	var out []ExpectedFailure
	var errs []error
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if v.Kind != yaml.ScalarNode {
			errs = append(errs, fmt.Errorf("expected failures: line %d: %q: the reason must be a string", v.Line, k.Value))
			continue
		}
		out = append(out, ExpectedFailure{ID: k.Value, Reason: v.Value})
	}
	if err := validateExpected(out); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// validateExpected checks every entry names a spec or a rule, once, with a
// reason.
func validateExpected(list []ExpectedFailure) error {
	specs := map[string]bool{}
	for _, s := range Specs() {
		specs[s.ID] = true
	}
	rules := map[string]bool{}
	for _, r := range Rules() {
		rules[r.ID] = true
	}
	var errs []error
	seen := map[string]bool{}
	for _, e := range list {
		switch {
		case !specs[e.ID] && !rules[e.ID]:
			errs = append(errs, fmt.Errorf("expected failures: %q is neither a spec ID (sandboxkit conform --list) nor a rule ID of the contract", e.ID))
		case strings.TrimSpace(e.Reason) == "":
			errs = append(errs, fmt.Errorf("expected failures: %q has no reason", e.ID))
		case seen[e.ID]:
			errs = append(errs, fmt.Errorf("expected failures: %q is listed twice", e.ID))
		}
		seen[e.ID] = true
	}
	return errors.Join(errs...)
}

// findingEntry names the report entries that carry a run finding: a
// defect the kit reports once for the run rather than in every spec that
// ran into it (TOOLS-3: results without structuredContent).
const findingEntry = "sandboxkit finding"

// finding records, once per spec, that a tool's result showed a run-wide
// defect of the rule. It may be called from any goroutine of the spec;
// [TestContext.reportFindings] adds them to the spec's report when the
// spec ends.
func (tc *TestContext) finding(rule, tool string) {
	key := rule + " " + tc.Config.toolName(tool)
	tc.mu.Lock()
	if tc.findings == nil {
		tc.findings = map[string]bool{}
	}
	tc.findings[key] = true
	tc.mu.Unlock()
}

// reportFindings adds the spec's findings to its report, as entries that
// travel in the JSON reports of parallel processes too, where
// [WriteOutcome] gathers them. It runs in the spec's cleanup, after a
// failure too.
func (tc *TestContext) reportFindings() {
	tc.mu.Lock()
	keys := mapKeysSorted(tc.findings)
	tc.findings = nil
	tc.mu.Unlock()
	for _, k := range keys {
		ginkgo.AddReportEntry(findingEntry, k, ginkgo.ReportEntryVisibilityNever)
	}
}

// runFindings gathers the run's findings from its report: one per rule,
// with the tools that showed it and the specs that ran into it, sorted.
func runFindings(r ginkgo.Report) []evidence.Finding {
	tools, specs := map[string][]string{}, map[string][]string{}
	for _, sr := range r.SpecReports {
		_, id, _ := classify(sr.Labels())
		for _, e := range sr.ReportEntries {
			if e.Name != findingEntry {
				continue
			}
			rule, tool, _ := strings.Cut(e.StringRepresentation(), " ")
			if !slices.Contains(tools[rule], tool) {
				tools[rule] = append(tools[rule], tool)
			}
			if !slices.Contains(specs[rule], id) {
				specs[rule] = append(specs[rule], id)
			}
		}
	}
	var out []evidence.Finding
	for _, rule := range mapKeysSorted(tools) {
		slices.Sort(tools[rule])
		slices.Sort(specs[rule])
		out = append(out, evidence.Finding{Rule: rule, Tools: tools[rule], Specs: specs[rule], Text: findingText[rule]})
	}
	return out
}

// findingText says what a rule's run finding means.
var findingText = map[string]string{
	"TOOLS-3": "successes without structuredContent: where the text block held a JSON object the kit read its values from it, and a spec that needed a value it could not read fails on its own",
}

// WriteOutcome prints what the per-spec summary does not say, and decides
// the run: its findings (each reported once, with the specs that ran into
// it), the specs not applicable to the declared profile, and, with a
// baseline (Config.ExpectedFailures), the failures it expected, those it
// did not and the entries that now pass. It reports whether the run
// passes: no spec failed and nothing was found, or, with a baseline,
// exactly the expected ones failed.
func WriteOutcome(w io.Writer, r ginkgo.Report, cfg *Config) bool {
	o := &outcome{w: w, expected: map[string]string{}, hit: map[string]bool{}, ran: map[string]bool{}, inconclusive: map[string]bool{}}
	for _, e := range cfg.ExpectedFailures {
		o.expected[e.ID] = e.Reason
	}
	specs := outcomeSpecs(r)
	o.writeFindings(r)
	writeNotApplicable(w, specs)
	o.checkFailures(specs)
	pass := len(r.SpecialSuiteFailureReasons) == 0 && len(o.unexpected) == 0
	if len(cfg.ExpectedFailures) == 0 {
		return pass
	}
	return o.writeBaseline(cfg.ExpectedFailures, pass)
}

// outcomeSpec is one spec of a run as WriteOutcome reads it.
type outcomeSpec struct {
	id    string
	rules []string
	state types.SpecState
	msg   string
}

// outcomeSpecs are the specs of a report.
func outcomeSpecs(r ginkgo.Report) []outcomeSpec {
	var specs []outcomeSpec
	for _, sr := range r.SpecReports {
		if sr.LeafNodeType != types.NodeTypeIt {
			continue
		}
		_, id, rules := classify(sr.Labels())
		specs = append(specs, outcomeSpec{id, rules, sr.State, sr.Failure.Message})
	}
	return specs
}

// outcome is a run held against its baseline (expected failures, by spec
// ID or rule) as WriteOutcome goes.
type outcome struct {
	w        io.Writer
	expected map[string]string
	// hit are the entries that matched a failure or finding; ran, the
	// entries whose specs ran.
	hit, ran   map[string]bool
	unexpected []string
	// inconclusive are the entries whose specs could not be judged.
	inconclusive map[string]bool
}

// expectedBy returns the baseline entry that covers a failure of a spec
// with these rules, or "".
func (o *outcome) expectedBy(id string, rules []string) string {
	if _, ok := o.expected[id]; ok {
		return id
	}
	for _, rule := range rules {
		if _, ok := o.expected[rule]; ok {
			return rule
		}
	}
	return ""
}

// writeFindings prints the run's findings, one line per rule, naming the
// tools and the specs.
func (o *outcome) writeFindings(r ginkgo.Report) {
	for _, f := range runFindings(r) {
		rule, ids := f.Rule, f.Specs
		line := fmt.Sprintf("%s: %s: %s; seen in %d %s (%s)", rule, strings.Join(f.Tools, ", "), f.Text,
			len(ids), countNoun(len(ids), "spec", "specs"), truncate(strings.Join(ids, ", "), 300))
		if _, ok := o.expected[rule]; ok {
			o.hit[rule], o.ran[rule] = true, true
			fmt.Fprintf(o.w, "  EXPECTED FINDING %s\n", line)
			continue
		}
		fmt.Fprintf(o.w, "  FINDING %s\n", line)
		o.unexpected = append(o.unexpected, rule)
	}
}

// writeNotApplicable prints the specs not applicable to the profile,
// grouped by reason.
func writeNotApplicable(w io.Writer, specs []outcomeSpec) {
	na := map[string][]string{}
	for _, s := range specs {
		if s.state.Is(types.SpecStateSkipped) && strings.HasPrefix(s.msg, NotApplicablePrefix) {
			na[s.msg] = append(na[s.msg], s.id)
		}
	}
	if len(na) == 0 {
		return
	}
	n := 0
	for _, ids := range na {
		n += len(ids)
	}
	fmt.Fprintf(w, "%d %s not applicable (not failures; --require-all runs them):\n", n, countNoun(n, "spec", "specs"))
	for _, msg := range mapKeysSorted(na) {
		fmt.Fprintf(w, "  N/A %s: %s\n", strings.Join(na[msg], ", "), msg)
	}
}

// checkFailures holds the failures against the baseline.
func (o *outcome) checkFailures(specs []outcomeSpec) {
	for _, s := range specs {
		entry := o.expectedBy(s.id, s.rules)
		switch {
		case s.state.Is(types.SpecStateFailureStates):
			if entry == "" {
				o.unexpected = append(o.unexpected, s.id)
				continue
			}
			o.hit[entry], o.ran[entry] = true, true
		case s.state.Is(types.SpecStatePassed):
			for _, id := range append([]string{s.id}, s.rules...) {
				if _, ok := o.expected[id]; ok {
					o.ran[id] = true
				}
			}
		case strings.HasPrefix(s.msg, summary.InconclusivePrefix):
			if entry != "" {
				o.inconclusive[entry] = true
			}
		}
	}
}

// writeBaseline prints how the run met its baseline and reports whether
// it passes: pass so far, and no entry that now passes.
func (o *outcome) writeBaseline(list []ExpectedFailure, pass bool) bool {
	w := o.w
	var nowPass, notRun, undecided []string
	for _, e := range list {
		switch {
		case o.hit[e.ID]:
		case o.ran[e.ID]:
			nowPass = append(nowPass, e.ID)
		case o.inconclusive[e.ID]:
			undecided = append(undecided, e.ID)
		default:
			notRun = append(notRun, e.ID)
		}
	}
	fmt.Fprintf(w, "expected failures: %d of %d entries failed as expected\n", len(o.hit), len(list))
	for _, e := range list {
		if o.hit[e.ID] {
			fmt.Fprintf(w, "  EXPECTED %s: %s\n", e.ID, e.Reason)
		}
	}
	for _, id := range o.unexpected {
		fmt.Fprintf(w, "  UNEXPECTED FAILURE %s (not in the expected-failures file)\n", id)
	}
	for _, id := range nowPass {
		fmt.Fprintf(w, "  NOW PASSES %s: remove it from the expected-failures file\n", id)
	}
	for _, id := range undecided {
		fmt.Fprintf(w, "  INCONCLUSIVE %s: its specs could not be judged against the fake (neither failed nor passed)\n", id)
	}
	for _, id := range notRun {
		fmt.Fprintf(w, "  NOT RUN %s: no spec of it ran (selection, profile or missing tools)\n", id)
	}
	if len(nowPass) > 0 {
		pass = false
	}
	if pass {
		fmt.Fprintln(w, "baseline: PASS (exactly the expected failures)")
	} else {
		fmt.Fprintln(w, "baseline: FAIL")
	}
	return pass
}

func countNoun(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
