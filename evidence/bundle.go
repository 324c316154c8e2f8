// Package evidence writes, verifies and renders evidence bundles: the record
// of one conformance run that a reviewer can check without rerunning it.
//
// A bundle is a directory holding
//
//	manifest.json     provenance: kit version and revision, Go version, server,
//	                  transport, provider, region, API host, mode, run ID, times,
//	                  the redacted configuration, cleanup counts
//	results.json      one entry per spec: ID, family, rule IDs, state, duration
//	junit.xml         the same results as JUnit XML
//	transcript.jsonl  every MCP tool call of the run, one JSON object a line
//	server.log        what the server under test wrote to its log (stderr)
//	summary.md        a Markdown summary
//	SHA256SUMS        the SHA-256 of every other file (sha256sum -c format)
//
// Every byte passes through a [Redactor] before it is written: known secret
// values (API keys, access tokens, sandbox domains the run saw) and secret
// patterns (E2B keys, bearer tokens, credential headers and JSON fields,
// URLs with credentials, the fake provider's canaries) are replaced. The
// redacted files are scanned again, also for encoded forms of the known
// values, and a bundle that would still hold a secret is not written.
//
// [Verify] checks a bundle: hashes, the specs its kit version requires
// (the versioned lists under required/), secret patterns, and the mode:
// loopback evidence (a run against the fake provider) never verifies as
// cloud evidence. [Render] turns a bundle into one self-contained HTML page.
package evidence

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// FormatVersion is the version of the bundle layout written by [Write].
const FormatVersion = 1

// Mode says what a run was against: a real provider or the kit's fake.
type Mode string

// The modes a bundle states.
const (
	// ModeCloud is a run against a real provider (conform --cloud).
	ModeCloud Mode = "cloud"
	// ModeLoopback is a run against the kit's fake provider, in-process or
	// on loopback. It proves nothing about a real provider (VERIFY-1).
	ModeLoopback Mode = "loopback"
)

// Modes lists every mode, in the order required-spec lists give them.
func Modes() []Mode { return []Mode{ModeCloud, ModeLoopback} }

// The files of a bundle.
const (
	FileManifest   = "manifest.json"
	FileResults    = "results.json"
	FileJUnit      = "junit.xml"
	FileTranscript = "transcript.jsonl"
	FileServerLog  = "server.log"
	FileSummary    = "summary.md"
	FileChecksums  = "SHA256SUMS"
)

// bundleFiles lists the files every bundle holds besides SHA256SUMS.
var bundleFiles = []string{FileManifest, FileResults, FileJUnit, FileTranscript, FileServerLog, FileSummary}

// Manifest is the provenance of a run.
type Manifest struct {
	// Format is [FormatVersion].
	Format int `json:"format"`
	// Mode is [ModeCloud] or [ModeLoopback]: what the evidence is about. A
	// run in cloud mode against a loopback API host (the fake provider
	// posing as a real one) is loopback evidence.
	Mode Mode `json:"mode"`
	// KitMode is the mode the kit ran in, when it differs from Mode (cloud
	// mode against a loopback host): it selects the required-spec list,
	// since such a run selected the cloud specs.
	KitMode Mode `json:"kit_mode,omitempty"`
	// RunID names the run (and its state file for sweeping).
	RunID string `json:"run_id"`
	// KitVersion is the conformance kit's version; it selects the list of
	// required specs.
	KitVersion string `json:"kit_version"`
	// KitRevision is the VCS revision the kit was built from ("+dirty" when
	// the tree had changes), the module version, or "unknown".
	KitRevision string `json:"kit_revision"`
	// GoVersion is the Go toolchain that built the kit.
	GoVersion string `json:"go_version"`
	// Server is what the server under test reported at initialize.
	Server Server `json:"server"`
	// Transport is how the kit reached the server: in-process, stdio or http.
	Transport string `json:"transport"`
	// ProviderID is the provider the run used ("e2b", or "sandboxkit-fake").
	ProviderID string `json:"provider_id"`
	// Region is the provider region, when known.
	Region string `json:"region"`
	// APIHost is the host of the provider's control-plane API.
	APIHost string `json:"api_host"`
	// StartedAt and EndedAt bound the run, in UTC.
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at"`
	// Totals count the results; [Write] computes them.
	Totals Totals `json:"totals"`
	// Findings are the run's defects that the kit reports once for the
	// run instead of in every spec that ran into them: a run with one does
	// not pass, even when every spec did.
	Findings []Finding `json:"findings,omitempty"`
	// Status is [StatusPassed] when no spec failed and nothing was found,
	// else [StatusFailed]; [Write] computes it. Bundles written before
	// it existed have none.
	Status string `json:"status,omitempty"`
	// Cleanup accounts for the sandboxes a cloud run created.
	Cleanup *Cleanup `json:"cleanup,omitempty"`
	// Config is the run's configuration, redacted.
	Config map[string]any `json:"config"`
}

// The statuses of a run (see [Manifest].Status).
const (
	StatusPassed = "passed"
	StatusFailed = "failed"
)

// Finding is a defect of the whole run, reported once (TOOLS-3: results
// without structuredContent, which the kit read from their text block).
type Finding struct {
	// Rule is the contract rule the finding breaks.
	Rule string `json:"rule"`
	// Tools are the server's tools that showed it.
	Tools []string `json:"tools"`
	// Specs are the specs that ran into it.
	Specs []string `json:"specs"`
	// Text says what was found.
	Text string `json:"text"`
}

// RunStatus is the status of a run with these totals and findings.
func RunStatus(t Totals, findings []Finding) string {
	if t.Failed > 0 || len(findings) > 0 {
		return StatusFailed
	}
	return StatusPassed
}

// Server identifies the server under test.
type Server struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Totals count spec results by outcome.
type Totals struct {
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Skipped int `json:"skipped"`
}

// Cleanup accounts for the sandboxes a cloud run created.
type Cleanup struct {
	// Tracked counts the sandboxes tracked from the moment their ID was
	// seen: those the run created (through the server or the kit's own
	// SDK), and those of NotCreated.
	Tracked int `json:"tracked"`
	// Gone counts those already destroyed when the kit checked (by the
	// server when their session ended, or by a spec).
	Gone int `json:"gone"`
	// DestroyedByKit counts those the kit destroyed itself: its own external
	// sandboxes, and any the server left alive.
	DestroyedByKit int `json:"destroyed_by_kit"`
	// Failed lists the IDs the kit could not destroy; sweep the run.
	Failed []string `json:"failed,omitempty"`
	// NotCreated lists the IDs the server reported as created by its
	// sessions that the platform says started before the run: someone
	// else's sandboxes, which the kit left alone.
	NotCreated []string `json:"not_created,omitempty"`
}

// SpecResult is one spec's outcome.
type SpecResult struct {
	ID     string   `json:"id"`
	Title  string   `json:"title"`
	Family string   `json:"family"`
	Rules  []string `json:"rules"`
	// State is Ginkgo's word for the outcome: passed, skipped, pending,
	// failed, panicked, interrupted, aborted or timedout.
	State      string `json:"state"`
	DurationMS int64  `json:"duration_ms"`
	// Message is the failure or skip reason.
	Message string `json:"message,omitempty"`
}

// Passed reports whether the spec passed.
func (r SpecResult) Passed() bool { return r.State == "passed" }

// Skipped reports whether the spec did not run (skipped or pending).
func (r SpecResult) Skipped() bool { return r.State == "skipped" || r.State == "pending" }

// Failed reports whether the spec ran and did not pass.
func (r SpecResult) Failed() bool { return !r.Passed() && !r.Skipped() }

// Exchange is one MCP tool call of the transcript.
type Exchange struct {
	// Spec is the ID of the spec that made the call.
	Spec string `json:"spec"`
	// Seq numbers the spec's calls from 1.
	Seq int `json:"seq"`
	// Session numbers the spec's sessions from 1.
	Session int `json:"session"`
	// Tool is the contract name of the tool.
	Tool string `json:"tool"`
	// Probe marks a call the kit made on its own to learn a sandbox ID (in
	// cloud mode), not one of the spec's.
	Probe bool `json:"probe,omitempty"`
	// Arguments are the call's arguments.
	Arguments json.RawMessage `json:"arguments"`
	// Result is the tool result as it arrived, or a JSON string holding the
	// protocol error.
	Result json.RawMessage `json:"result"`
}

// Bundle is everything a bundle holds before it is written.
type Bundle struct {
	Manifest   Manifest
	Results    []SpecResult
	Transcript []Exchange
	ServerLog  string
}

// Count returns the totals of the results.
func Count(results []SpecResult) Totals {
	var t Totals
	for _, r := range results {
		switch {
		case r.Passed():
			t.Passed++
		case r.Skipped():
			t.Skipped++
		default:
			t.Failed++
		}
	}
	return t
}

// LeakError is returned by [Write] when a secret would remain in the bundle
// after redaction; nothing was written.
type LeakError struct {
	Dir string
	// Findings name the file and what was found in it, never the secret.
	Findings []string
}

func (e *LeakError) Error() string {
	return fmt.Sprintf("evidence: refusing to write %s: secrets remain after redaction:\n\t%s", e.Dir, strings.Join(e.Findings, "\n\t"))
}

// Write redacts the bundle with r, checks that nothing secret remains, and
// writes it to dir, which must not exist or be empty. The files are written
// to a temporary directory beside dir and renamed into place, so dir either
// holds a whole bundle or nothing. r may be nil (patterns only).
func Write(dir string, b *Bundle, r *Redactor) error {
	if r == nil {
		r = NewRedactor()
	}
	files, err := render(b)
	if err != nil {
		return err
	}
	names := sortedNames(files)
	var leaks []string
	for _, name := range names {
		files[name] = r.Redact(files[name])
		for _, f := range r.Scan(files[name]) {
			leaks = append(leaks, name+": "+f)
		}
	}
	if len(leaks) > 0 {
		return &LeakError{Dir: dir, Findings: leaks}
	}
	files[FileChecksums] = checksums(files)

	if err := CheckDir(dir); err != nil {
		return err
	}
	parent := filepath.Dir(filepath.Clean(dir))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("evidence: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return fmt.Errorf("evidence: %w", err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(tmp, name), data, 0o644); err != nil {
			return fmt.Errorf("evidence: %w", err)
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("evidence: %w", err)
	}
	_ = os.Remove(dir) // empty or absent, checked above
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("evidence: %w", err)
	}
	return nil
}

// CheckDir reports whether [Write] may write a bundle to dir: dir must not
// exist, or be an empty directory. A run checks it before it starts, so
// that a cloud run does not create sandboxes for a bundle it cannot write.
func CheckDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case err == nil && len(entries) > 0:
		return fmt.Errorf("evidence: %s exists and is not empty", dir)
	case err == nil, errors.Is(err, os.ErrNotExist):
		return nil
	default:
		return fmt.Errorf("evidence: %w", err)
	}
}

// render builds every file but SHA256SUMS, unredacted.
func render(b *Bundle) (map[string][]byte, error) {
	m := b.Manifest
	m.Format = FormatVersion
	m.Totals = Count(b.Results)
	m.Status = RunStatus(m.Totals, m.Findings)
	if m.Config == nil {
		m.Config = map[string]any{}
	}
	results := b.Results
	if results == nil {
		results = []SpecResult{}
	}
	files := map[string][]byte{}
	var err error
	if files[FileManifest], err = marshal(m); err != nil {
		return nil, err
	}
	if files[FileResults], err = marshal(results); err != nil {
		return nil, err
	}
	var tr bytes.Buffer
	for _, ex := range b.Transcript {
		if len(ex.Arguments) == 0 || !json.Valid(ex.Arguments) {
			ex.Arguments = jsonString(string(ex.Arguments))
		}
		if len(ex.Result) == 0 || !json.Valid(ex.Result) {
			ex.Result = jsonString(string(ex.Result))
		}
		line, err := compact(ex)
		if err != nil {
			return nil, err
		}
		tr.Write(line)
		tr.WriteByte('\n')
	}
	files[FileTranscript] = tr.Bytes()
	files[FileServerLog] = []byte(b.ServerLog)
	if files[FileJUnit], err = junitXML(m, results); err != nil {
		return nil, err
	}
	files[FileSummary] = summaryMarkdown(m, results)
	return files, nil
}

// checksums is the SHA256SUMS file for files, in the format of sha256sum(1).
func checksums(files map[string][]byte) []byte {
	digests := make(map[string][]byte, len(files))
	for name, data := range files {
		sum := sha256.Sum256(data)
		digests[name] = []byte(hex.EncodeToString(sum[:]))
	}
	return sumsFile(digests)
}

// sumsFile formats SHA256SUMS from hex digests by file name: one
// "<digest>  <name>" line per file, sorted by name, each ending in a
// newline. [Write] writes it so and [Verify] requires that form.
func sumsFile(digests map[string][]byte) []byte {
	var b bytes.Buffer
	for _, name := range sortedNames(digests) {
		fmt.Fprintf(&b, "%s  %s\n", digests[name], name)
	}
	return b.Bytes()
}

// Read loads a bundle's manifest, results, transcript and server log. It
// does not verify the bundle; see [Verify].
func Read(dir string) (*Bundle, error) {
	b := &Bundle{}
	var errs []error
	if data, err := os.ReadFile(filepath.Join(dir, FileManifest)); err != nil {
		errs = append(errs, err)
	} else if err := json.Unmarshal(data, &b.Manifest); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", FileManifest, err))
	}
	if data, err := os.ReadFile(filepath.Join(dir, FileResults)); err != nil {
		errs = append(errs, err)
	} else if err := json.Unmarshal(data, &b.Results); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", FileResults, err))
	}
	if data, err := os.ReadFile(filepath.Join(dir, FileTranscript)); err != nil {
		errs = append(errs, err)
	} else {
		tr, err := parseTranscript(data)
		if err != nil {
			errs = append(errs, err)
		}
		b.Transcript = tr
	}
	if data, err := os.ReadFile(filepath.Join(dir, FileServerLog)); err != nil {
		errs = append(errs, err)
	} else {
		b.ServerLog = string(data)
	}
	return b, errors.Join(errs...)
}

func parseTranscript(data []byte) ([]Exchange, error) {
	var out []Exchange
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 1<<20), 256<<20)
	n := 0
	for sc.Scan() {
		n++
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var ex Exchange
		if err := json.Unmarshal(sc.Bytes(), &ex); err != nil {
			return out, fmt.Errorf("%s: line %d is not a JSON exchange: %w", FileTranscript, n, err)
		}
		out = append(out, ex)
	}
	return out, sc.Err()
}

// marshal is indented JSON without HTML escaping, ending in a newline.
// Struct fields keep their order and map keys are sorted, so equal input
// gives equal bytes.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("evidence: %w", err)
	}
	return b.Bytes(), nil
}

// compact is one-line JSON without HTML escaping.
func compact(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("evidence: %w", err)
	}
	out := bytes.TrimRight(b.Bytes(), "\n")
	var c bytes.Buffer
	if err := json.Compact(&c, out); err != nil {
		return nil, fmt.Errorf("evidence: %w", err)
	}
	return c.Bytes(), nil
}

func jsonString(s string) json.RawMessage {
	data, _ := json.Marshal(s)
	return data
}

func sortedNames(files map[string][]byte) []string {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
