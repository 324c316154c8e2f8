package summary

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
)

// A spec ends in one of four outcomes: passed, failed, skipped, or
// inconclusive. An inconclusive spec is one the kit could not judge: its
// calls never reached the fake, went to a sandbox port the fake does not
// serve, never met the fault it injected, or the server did not start. Its
// own checks then say nothing about the server, so they fail nothing; but
// a defect the spec saw on the way (a secret, a URL or a raw provider
// error in a tool result, a sandbox left running, a call that acted on
// another sandbox than the one it named) is true whatever the fake
// served, and the spec reports it as a failure.
//
// Ginkgo knows no such outcome: [Conclude] rewrites a finished report so
// that an inconclusive spec without a defect is skipped with a message
// that begins with [InconclusivePrefix] (JUnit readers show a skipped test
// with its message and count it neither passed nor failed, which is what
// it is; an <error> would read as a failed build), and one with defects
// fails with the defects alone.
const (
	// EntryInconclusive names the report entry that says why a spec could
	// not be judged: "kind: reason", kind one of the Inconclusive* kinds.
	EntryInconclusive = "sandboxkit inconclusive"
	// EntryDefect names the report entries of the defects a spec saw that
	// hold whatever the fake served: "RULE: what".
	EntryDefect = "sandboxkit defect"
	// InconclusivePrefix begins the message of an inconclusive spec.
	InconclusivePrefix = "INCONCLUSIVE"
)

// Why a spec could not be judged.
const (
	// InconclusiveNotTestable: the server's calls did not reach what the
	// fake serves (no request at all, or a port it does not serve).
	InconclusiveNotTestable = "not testable"
	// InconclusiveNotExercised: the fault the spec injected was never met.
	InconclusiveNotExercised = "fault never exercised"
	// InconclusiveNotStarted: the server did not start (a run error).
	InconclusiveNotStarted = "server did not start"
)

// InconclusiveValue is the value of an [EntryInconclusive] entry.
func InconclusiveValue(kind, reason string) string { return kind + ": " + reason }

// DefectValue is the value of an [EntryDefect] entry.
func DefectValue(rule, what string) string { return rule + ": " + what }

// IsInconclusive reports whether a spec's report is an inconclusive
// outcome (after [Conclude]).
func IsInconclusive(sr types.SpecReport) bool {
	return sr.State.Is(types.SpecStateSkipped) && strings.HasPrefix(sr.Failure.Message, InconclusivePrefix)
}

// InconclusiveKind returns the kind of an inconclusive spec ("" if it is
// not one).
func InconclusiveKind(sr types.SpecReport) string {
	if !IsInconclusive(sr) {
		return ""
	}
	kind, _, _ := strings.Cut(entryValue(sr, EntryInconclusive), ": ")
	return kind
}

// Conclude returns the report with each spec's outcome decided: a failed
// spec the kit could not judge becomes inconclusive, or fails with only
// the defects it saw; every failed spec carries the rules of its defects
// among its labels, so JSON and JUnit readers see a leak as SESSION-1
// (or ERR-3) and not only as the running spec's rules. Concluding a
// concluded report changes nothing.
func Conclude(r ginkgo.Report) ginkgo.Report {
	specs := make([]types.SpecReport, len(r.SpecReports))
	failed := false
	for i, sr := range r.SpecReports {
		specs[i] = concludeSpec(sr)
		failed = failed || specs[i].State.Is(types.SpecStateFailureStates)
	}
	r.SpecReports = specs
	// A suite whose only failures were inconclusive specs did not fail
	// (JSON readers look at SuiteSucceeded).
	r.SuiteSucceeded = r.SuiteSucceeded || !failed && len(r.SpecialSuiteFailureReasons) == 0 && len(specs) > 0
	return r
}

// concludeSpec decides one spec's outcome.
func concludeSpec(sr types.SpecReport) types.SpecReport {
	if sr.LeafNodeType != types.NodeTypeIt || !sr.State.Is(types.SpecStateFailureStates) {
		return sr
	}
	sr.LeafNodeLabels = withDefectRules(sr)
	why := entryValue(sr, EntryInconclusive)
	if why == "" {
		return sr
	}
	defects, leaks := entryValues(sr, EntryDefect), leakFailures(sr)
	if len(defects) == 0 && len(leaks) == 0 {
		own := firstProblem(sr.Failure.Message)
		sr.State = types.SpecStateSkipped
		sr.Failure = types.Failure{Message: inconclusiveMessage(why, own), Location: sr.Failure.Location}
		sr.AdditionalFailures = nil
		return sr
	}
	var failures []types.Failure
	if len(defects) > 0 {
		failures = append(failures, types.Failure{Message: defectsMessage(defects, why), Location: sr.Failure.Location,
			FailureNodeType: sr.Failure.FailureNodeType, FailureNodeLocation: sr.Failure.FailureNodeLocation})
	}
	failures = append(failures, leaks...)
	sr.State = types.SpecStateFailed
	sr.Failure = failures[0]
	sr.AdditionalFailures = nil
	for _, f := range failures[1:] {
		sr.AdditionalFailures = append(sr.AdditionalFailures, types.AdditionalFailure{State: types.SpecStateFailed, Failure: f})
	}
	return sr
}

// firstProblem is a failure message's first line, or, when that heads a
// list ("12 problem(s):"), the list's first entry.
func firstProblem(msg string) string {
	lines := strings.Split(strings.TrimSpace(msg), "\n")
	if first := strings.TrimSpace(lines[0]); !strings.HasSuffix(first, ":") || len(lines) == 1 {
		return first
	}
	return strings.TrimSpace(lines[1])
}

// inconclusiveMessage is the skip message of an inconclusive spec: why,
// and the first line of the failure its checks would have reported.
func inconclusiveMessage(why, own string) string {
	kind, reason, _ := strings.Cut(why, ": ")
	msg := fmt.Sprintf("%s (%s): %s", InconclusivePrefix, kind, reason)
	if own != "" && !strings.HasPrefix(own, InconclusivePrefix) && !strings.Contains(why, own) {
		msg += "\nthe spec's own checks, not judged: " + own
	}
	return msg
}

// defectsMessage is the failure of an inconclusive spec that saw defects:
// one a line (the summary groups it by the first), then why the rest of
// the spec could not be judged.
func defectsMessage(defects []string, why string) string {
	kind, reason, _ := strings.Cut(why, ": ")
	return fmt.Sprintf("%s found although the spec could not be judged:\n  %s\n%s (%s): %s",
		plural(len(defects), "defect", "defects"), strings.Join(defects, "\n  "), InconclusivePrefix, kind, reason)
}

// withoutInconclusiveLine returns a failure message without the
// INCONCLUSIVE line that closes an inconclusive spec's defects: the
// defects are its cause, not the words the reason quotes (an argument
// refusal, a provider error).
func withoutInconclusiveLine(msg string) string {
	if i := strings.Index(msg, "\n"+InconclusivePrefix+" ("); i >= 0 {
		return msg[:i]
	}
	return msg
}

// leakFailures are the spec's failures from the leak check (SESSION-1).
func leakFailures(sr types.SpecReport) []types.Failure {
	var out []types.Failure
	for _, f := range allFailures(sr) {
		if strings.HasPrefix(firstLine(f.Message), LeakPrefix) {
			out = append(out, f)
		}
	}
	return out
}

// allFailures are a spec's primary failure and its additional ones.
func allFailures(sr types.SpecReport) []types.Failure {
	out := []types.Failure{sr.Failure}
	for _, af := range sr.AdditionalFailures {
		out = append(out, af.Failure)
	}
	return out
}

// withDefectRules returns the spec's labels with the rule of each defect
// it failed with added (SESSION-1 for the leak check's failure, SESSION-2
// for a call on another sandbox than it named).
func withDefectRules(sr types.SpecReport) []string {
	var rules []string
	for _, d := range entryValues(sr, EntryDefect) {
		if rule, _, ok := strings.Cut(d, ": "); ok && ruleLabel.MatchString(rule) {
			rules = append(rules, rule)
		}
	}
	if len(leakFailures(sr)) > 0 {
		rules = append(rules, "SESSION-1")
	}
	for _, f := range allFailures(sr) {
		if strings.HasPrefix(firstLine(f.Message), WrongSandboxPrefix) {
			rules = append(rules, WrongSandboxRule)
		}
	}
	labels := slices.Clone(sr.LeafNodeLabels)
	for _, rule := range rules {
		if !slices.Contains(sr.Labels(), rule) && !slices.Contains(labels, rule) {
			labels = append(labels, rule)
		}
	}
	return labels
}

// entryValues returns the values of the spec's report entries named name,
// once each, in order.
func entryValues(sr types.SpecReport, name string) []string {
	var out []string
	for _, e := range sr.ReportEntries {
		if v := e.Value.String(); e.Name == name && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// writeInconclusive prints the inconclusive specs grouped by why: a
// server that did not start as a run error, the others as INCONCLUSIVE.
// Reasons that share a cause the summary knows (an argument the server's
// schema refuses stopped every unexercised fault) are one group.
func writeInconclusive(w io.Writer, r ginkgo.Report, cat Catalog) {
	causes := newCauseReader(cat.Tools)
	by, text := map[string][]string{}, map[string]string{}
	var order []string
	for _, sr := range r.SpecReports {
		if sr.LeafNodeType != types.NodeTypeIt || !IsInconclusive(sr) {
			continue
		}
		why := entryValue(sr, EntryInconclusive)
		kind, reason, _ := strings.Cut(why, ": ")
		key, cause, _ := causes.firstCause(reason)
		key = kind + "|" + key
		if by[key] == nil {
			order = append(order, key)
			text[key] = inconclusiveHead(kind, reason, cause, strings.Contains(key, "|msg:"))
		}
		_, id, _ := cat.Classify(sr.Labels())
		by[key] = append(by[key], id)
	}
	if len(order) == 0 {
		return
	}
	fmt.Fprintln(w, "inconclusive (the kit could not judge these specs; not failures):")
	for _, key := range order {
		fmt.Fprintf(w, "  %s\n       %s not judged: %s\n", text[key], plural(len(by[key]), "spec", "specs"), idList(by[key]))
	}
}

// inconclusiveHead is the heading of a group of inconclusive specs: the
// kind and the reason, or, when the reason shows a cause the summary
// knows, the cause and the first reason as an example.
func inconclusiveHead(kind, reason, cause string, plain bool) string {
	head := InconclusivePrefix + " (" + kind + ")"
	if kind == InconclusiveNotStarted {
		head = "RUN ERROR (" + kind + ")"
	}
	if plain {
		return head + " " + truncate(reason, 600)
	}
	return head + " " + truncate(cause, 600) + "\n       for example: " + truncate(reason, 300)
}

// idList joins spec IDs, the first dozen in full.
func idList(ids []string) string {
	if len(ids) > 12 {
		return strings.Join(ids[:12], ", ") + fmt.Sprintf(" and %d more", len(ids)-12)
	}
	return strings.Join(ids, ", ")
}
