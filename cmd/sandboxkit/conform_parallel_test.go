package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/sandboxkit/sandboxkit/conformance"
)

// Each spec comes out of the merge once: from the process that ran it, or,
// skipped by the selection in every process, from the first. A spec no
// process ran (every one saw it claimed) fails the run.
func TestMergeReports(t *testing.T) {
	spec := func(text string, state types.SpecState, msg string) types.SpecReport {
		return types.SpecReport{LeafNodeType: types.NodeTypeIt, LeafNodeText: text, State: state, Failure: types.Failure{Message: msg}}
	}
	claimed := func(text string) types.SpecReport {
		return spec(text, types.SpecStateSkipped, conformance.ClaimedElsewhere)
	}
	report := func(ok bool, specs ...types.SpecReport) []types.Report {
		return []types.Report{{SuiteDescription: "kit", SuiteSucceeded: ok, SpecReports: specs}}
	}
	a := &shardResult{reports: report(true, spec("one", types.SpecStatePassed, ""), claimed("two"), spec("cloud", types.SpecStateSkipped, "cloud-only"))}
	b := &shardResult{reports: report(false, claimed("one"), spec("two", types.SpecStateFailed, "boom"), spec("cloud", types.SpecStateSkipped, "cloud-only"))}
	merged, ok := mergeReports([]*shardResult{a, b}, 0)
	if !ok || merged.SuiteSucceeded {
		t.Error("every process ran and reported, but the merged report must say a spec failed")
	}
	if conformance.WriteOutcome(io.Discard, merged, conformance.NewConfig()) {
		t.Error("a failed spec in one process must fail the merged run")
	}
	var got []string
	for _, sr := range merged.SpecReports {
		got = append(got, sr.LeafNodeText+"="+sr.State.String())
	}
	if want := "one=passed two=failed cloud=skipped"; strings.Join(got, " ") != want {
		t.Errorf("merged specs %q, want %q", strings.Join(got, " "), want)
	}
	if merged.PreRunStats.SpecsThatWillRun != 2 {
		t.Errorf("SpecsThatWillRun = %d, want 2", merged.PreRunStats.SpecsThatWillRun)
	}

	// Every process passed, but "two" was claimed and never reported run.
	c := &shardResult{reports: report(true, spec("one", types.SpecStatePassed, ""), claimed("two"))}
	d := &shardResult{reports: report(true, claimed("one"), claimed("two"))}
	if _, ok := mergeReports([]*shardResult{c, d}, 0); ok {
		t.Error("a spec that no process ran must fail the merged run")
	}
	// A process that left no report fails the run.
	if _, ok := mergeReports([]*shardResult{c, {}}, 0); ok {
		t.Error("a process without a report must fail the merged run")
	}
}

// Exactly one claim wins each spec ID.
func TestClaimIn(t *testing.T) {
	dir := t.TempDir()
	first, second := claimIn(dir), claimIn(dir)
	if !first("errors.hang") || second("errors.hang") || first("errors.hang") {
		t.Error("the first claim of an ID must win, every later one lose")
	}
	if !second("errors.drip") {
		t.Error("another ID is free")
	}
}

// A crashed process is named with the spec it was running: one it claimed
// that no process reported run.
func TestUnfinishedClaims(t *testing.T) {
	dir := t.TempDir()
	claim := claimIn(dir)
	claim("errors.hang")
	claim("errors.drip")
	if err := os.WriteFile(filepath.Join(dir, "errors.oversized"), []byte("1"), 0o600); err != nil {
		t.Fatal(err)
	}
	merged := types.Report{SpecReports: []types.SpecReport{
		{LeafNodeType: types.NodeTypeIt, LeafNodeLabels: []string{"errors", "errors.hang"}, State: types.SpecStatePassed},
		{LeafNodeType: types.NodeTypeIt, LeafNodeLabels: []string{"errors", "errors.drip"}, State: types.SpecStateSkipped, Failure: types.Failure{Message: conformance.ClaimedElsewhere}},
	}}
	got := unfinishedClaims(dir, os.Getpid(), merged)
	if strings.Join(got, ",") != "errors.drip" {
		t.Errorf("unfinished claims %v, want [errors.drip]: claimed by this process and reported run by none", got)
	}
	if note := unfinishedNote(got); !strings.Contains(note, "while it ran errors.drip") {
		t.Errorf("note %q does not name the spec", note)
	}
}

// The parallel run against the in-process reference server gives the
// same summary as one process, and one JUnit report naming each spec once.
func TestConformParallelMatchesSerial(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command and runs part of the kit twice")
	}
	dir := t.TempDir()
	bin := buildCommand(t, dir)
	const filter = "protocol || bounds.create-sandbox || cloud || errors.oversized"
	summary := regexp.MustCompile(`(?s)sandboxkit conformance summary\n.*?\d+ passed, \d+ failed, \d+ skipped\n`)
	run := func(procs string, junit string) string {
		var out bytes.Buffer
		c := exec.Command(bin, "conform", "--procs", procs, "--label-filter", filter, "--junit-report", junit)
		c.Stdout, c.Stderr = &out, &out
		if err := c.Run(); err != nil {
			t.Fatalf("--procs %s: %v\n%s", procs, err, out.String())
		}
		return summary.FindString(out.String())
	}
	serial := run("1", filepath.Join(dir, "serial.xml"))
	parallel := run("3", filepath.Join(dir, "parallel.xml"))
	if serial == "" || serial != parallel {
		t.Errorf("summaries differ:\n--- one process\n%s--- three\n%s", serial, parallel)
	}
	// The filter selects the protocol family and two legacy runs (a modern
	// run's label is its ID with @2026-07-28).
	runs, selected := 0, 2
	for _, s := range conformance.Specs() {
		runs += len(s.Eras())
		if s.Family == conformance.FamilyProtocol {
			selected++
		}
	}
	if want := fmt.Sprintf("%d passed, 0 failed, %d skipped", selected, runs-selected); !strings.Contains(parallel, want) {
		t.Errorf("summary %q, want %q (the rest left out by the filter)", parallel, want)
	}
	data, err := os.ReadFile(filepath.Join(dir, "parallel.xml"))
	if err != nil {
		t.Fatal(err)
	}
	var junit struct {
		Suites []struct {
			Cases []struct {
				Name string `xml:"name,attr"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(data, &junit); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, s := range junit.Suites {
		for _, c := range s.Cases {
			seen[c.Name]++
		}
	}
	for name, n := range seen {
		if n != 1 {
			t.Errorf("the merged JUnit report names %q %d times", name, n)
		}
	}
	if len(seen) < runs {
		t.Errorf("the merged JUnit report has %d cases, want every one of the %d runs of the specs", len(seen), runs)
	}
}

// A parallel run decides on the merged report against the baseline: it
// passes when exactly the expected specs fail, and names an entry that
// now passes (and then fails).
func TestConformParallelExpectedFailures(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command and runs part of the kit twice")
	}
	dir := t.TempDir()
	bin := buildCommand(t, dir)
	// run_command mapped to a name the reference server does not have,
	// with --require-all: exec.run-command-streams fails, for certain.
	toolMap := filepath.Join(dir, "map.json")
	baseline := filepath.Join(dir, "baseline.yaml")
	if err := os.WriteFile(toolMap, []byte(`{"run_command": {"name": "no_such_tool"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(entries string) (string, error) {
		if err := os.WriteFile(baseline, []byte(entries), 0o600); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		c := exec.Command(bin, "conform", "--procs", "2", "--require-all", "--tool-map", toolMap, "--expected-failures", baseline,
			"--label-filter", "exec.run-command-streams || bounds.create-sandbox")
		c.Stdout, c.Stderr = &out, &out
		err := c.Run()
		return out.String(), err
	}
	out, err := run("exec.run-command-streams: run_command is mapped away in this test\n")
	if err != nil || !strings.Contains(out, "EXPECTED exec.run-command-streams") || !strings.Contains(out, "baseline: PASS") {
		t.Errorf("exactly the expected failure must pass the run (%v)\n%s", err, out)
	}
	out, err = run("exec.run-command-streams: mapped away\nbounds.create-sandbox: fixed since\n")
	if err == nil || !strings.Contains(out, "NOW PASSES bounds.create-sandbox") {
		t.Errorf("an entry that passes must be named and fail the run (%v)\n%s", err, out)
	}
}

// A process of a parallel run that ended with a status other than 0, or
// by a signal, is a run error naming it, even when it wrote its report
// first; processes that exited 0 are not.
func TestConformParallelCrashedProcess(t *testing.T) {
	ended := func(script string) *shardResult {
		c := exec.Command("sh", "-c", script)
		r := &shardResult{reports: []types.Report{{SuiteDescription: "kit", SuiteSucceeded: true}}}
		r.err = c.Run()
		r.state = c.ProcessState
		return r
	}
	if err := shardExits([]*shardResult{ended("exit 0"), ended("exit 0")}); err != nil {
		t.Errorf("processes that exited 0 are no run error: %v", err)
	}
	err := shardExits([]*shardResult{ended("exit 0"), ended("exit 2"), ended("kill -9 $$")})
	if err == nil {
		t.Fatal("processes that crashed after writing their reports went unnoticed")
	}
	for _, want := range []string{"process 2 of 3 ended abnormally (exit status 2), after it wrote its report", "process 3 of 3 ended abnormally (signal: killed)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("run error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "process 1 ") {
		t.Errorf("run error %q names a process that exited 0", err)
	}
	if err := shardExits([]*shardResult{{err: os.ErrNotExist}}); err == nil || !strings.Contains(err.Error(), "process 1 of 1 did not run") {
		t.Errorf("a process that did not start: %v", err)
	}
}

// buildCommand builds sandboxkit into dir, for tests that run it as a user
// does, and returns its path.
func buildCommand(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "sandboxkit")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}
