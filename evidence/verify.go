package evidence

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// VerifyOptions tune [Verify].
type VerifyOptions struct {
	// Cloud requires cloud evidence: a bundle of mode cloud, from a real
	// (not loopback) provider API host, built from a known kit revision.
	// Loopback evidence never passes.
	Cloud bool
}

// Problem is one thing wrong with a bundle.
type Problem struct {
	// File is the bundle file concerned ("" for the bundle as a whole).
	File string
	// Message says what is wrong.
	Message string
}

func (p Problem) String() string {
	if p.File == "" {
		return p.Message
	}
	return p.File + ": " + p.Message
}

// VerifyError lists every problem [Verify] found.
type VerifyError struct {
	Dir      string
	Problems []Problem
}

func (e *VerifyError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "evidence %s: %d problem(s):", e.Dir, len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n\t" + p.String())
	}
	return b.String()
}

// Verify checks the bundle in dir and returns a *VerifyError listing every
// problem, or nil:
//
//   - SHA256SUMS covers exactly the bundle's files, in the form [Write]
//     writes it, and every hash matches;
//   - the manifest states the format, the mode (cloud or loopback), the
//     run ID and the kit version, and its totals match the results;
//   - every spec the kit version's required list names for the mode is
//     present and passed, and no spec failed;
//   - no file matches a secret pattern;
//   - cloud evidence names a provider and an API host that is not loopback
//     (nor a reserved test domain) and a known kit revision; with
//     opts.Cloud, loopback evidence is refused.
func Verify(dir string, opts *VerifyOptions) error {
	if opts == nil {
		opts = &VerifyOptions{}
	}
	v := &verifier{dir: dir}
	v.run(opts)
	if len(v.problems) == 0 {
		return nil
	}
	return &VerifyError{Dir: dir, Problems: v.problems}
}

type verifier struct {
	dir      string
	problems []Problem
}

func (v *verifier) add(file, format string, args ...any) {
	v.problems = append(v.problems, Problem{File: file, Message: fmt.Sprintf(format, args...)})
}

var sumLine = regexp.MustCompile(`^([0-9a-f]{64})  ([A-Za-z0-9._-]+)$`)

func (v *verifier) run(opts *VerifyOptions) {
	st, err := os.Stat(v.dir)
	if err != nil || !st.IsDir() {
		v.add("", "not a bundle directory")
		return
	}
	// Hashes.
	listed := map[string]bool{}
	sums, err := os.ReadFile(filepath.Join(v.dir, FileChecksums))
	if err != nil {
		v.add(FileChecksums, "missing: the bundle's files cannot be checked")
	} else {
		sc := bufio.NewScanner(bytes.NewReader(sums))
		n, malformed := 0, false
		hashes := map[string][]byte{}
		for sc.Scan() {
			n++
			m := sumLine.FindStringSubmatch(sc.Text())
			if m == nil {
				v.add(FileChecksums, "line %d is not \"<sha256>  <file>\"", n)
				malformed = true
				continue
			}
			name := m[2]
			if listed[name] || name == FileChecksums {
				v.add(FileChecksums, "line %d: %s listed twice or lists itself", n, name)
				malformed = true
				continue
			}
			listed[name] = true
			hashes[name] = []byte(m[1])
			data, err := os.ReadFile(filepath.Join(v.dir, name))
			if err != nil {
				v.add(name, "listed in SHA256SUMS but missing")
				continue
			}
			sum := sha256.Sum256(data)
			if hex.EncodeToString(sum[:]) != m[1] {
				v.add(name, "SHA-256 does not match SHA256SUMS: the file was changed")
			}
		}
		// The writer lists the files sorted by name, one line each ending
		// in a newline: any other form (lines reordered, a newline dropped
		// or turned into CRLF) means the file was edited.
		if !malformed && !bytes.Equal(sumsFile(hashes), sums) {
			v.add(FileChecksums, "not in the form the writer produces (lines sorted by file name, each ending in a newline): the file was changed")
		}
	}
	entries, _ := os.ReadDir(v.dir)
	for _, e := range entries {
		name := e.Name()
		if name == FileChecksums {
			continue
		}
		if !e.Type().IsRegular() {
			v.add(name, "not a regular file")
			continue
		}
		if !listed[name] && sums != nil {
			v.add(name, "not covered by SHA256SUMS")
		}
	}
	for _, name := range bundleFiles {
		if _, err := os.Stat(filepath.Join(v.dir, name)); err != nil {
			v.add(name, "missing")
		}
	}
	// Secret patterns, in every file.
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(v.dir, e.Name()))
		if err != nil {
			continue
		}
		for _, f := range ScanPatterns(data) {
			v.add(e.Name(), "holds a %s", f)
		}
	}
	// Structure.
	var m Manifest
	if data, err := os.ReadFile(filepath.Join(v.dir, FileManifest)); err == nil {
		if err := json.Unmarshal(data, &m); err != nil {
			v.add(FileManifest, "not a JSON manifest: %v", err)
		}
	}
	var results []SpecResult
	if data, err := os.ReadFile(filepath.Join(v.dir, FileResults)); err == nil {
		if err := json.Unmarshal(data, &results); err != nil {
			v.add(FileResults, "not a JSON list of results: %v", err)
		}
	}
	if data, err := os.ReadFile(filepath.Join(v.dir, FileTranscript)); err == nil {
		if _, err := parseTranscript(data); err != nil {
			v.add(FileTranscript, "%v", strings.TrimPrefix(err.Error(), FileTranscript+": "))
		}
	}
	if data, err := os.ReadFile(filepath.Join(v.dir, FileJUnit)); err == nil {
		if err := wellFormedXML(data); err != nil {
			v.add(FileJUnit, "not well-formed XML: %v", err)
		}
	}
	v.manifest(m, results, opts)
	v.results(m, results)
}

func (v *verifier) manifest(m Manifest, results []SpecResult, opts *VerifyOptions) {
	if m.Format != FormatVersion {
		v.add(FileManifest, "format %d, want %d", m.Format, FormatVersion)
	}
	if m.RunID == "" {
		v.add(FileManifest, "no run ID")
	}
	if m.KitVersion == "" {
		v.add(FileManifest, "no kit version")
	}
	if m.StartedAt.IsZero() || m.EndedAt.IsZero() || m.EndedAt.Before(m.StartedAt) {
		v.add(FileManifest, "start and end times missing or out of order")
	}
	switch m.Mode {
	case ModeCloud:
		if m.ProviderID == "" {
			v.add(FileManifest, "cloud evidence without a provider ID")
		}
		if IsLoopbackHost(m.APIHost) {
			v.add(FileManifest, "cloud evidence from API host %q, which is loopback or a reserved test name: not a real provider", m.APIHost)
		}
		if m.KitRevision == "" || m.KitRevision == "unknown" {
			v.add(FileManifest, "cloud evidence from an unknown kit revision (build the kit from a Git checkout)")
		}
	case ModeLoopback:
		if opts.Cloud {
			v.add(FileManifest, "mode is loopback: evidence against the fake provider never verifies as cloud evidence")
		}
		if m.KitMode != "" && m.KitMode != ModeCloud {
			v.add(FileManifest, "kit_mode %q: only a cloud run against a loopback host states a kit mode", m.KitMode)
		}
	default:
		v.add(FileManifest, "mode %q: the bundle must state cloud or loopback", m.Mode)
	}
	if got := Count(results); got != m.Totals {
		v.add(FileManifest, "totals %+v do not match results.json (%+v)", m.Totals, got)
	}
	if want := RunStatus(Count(results), m.Findings); m.Status != "" && m.Status != want {
		v.add(FileManifest, "status %q, but %d specs failed and the run has %d findings: want %q", m.Status, Count(results).Failed, len(m.Findings), want)
	}
}

func (v *verifier) results(m Manifest, results []SpecResult) {
	byID := map[string]SpecResult{}
	for _, r := range results {
		if _, dup := byID[r.ID]; dup {
			v.add(FileResults, "spec %s appears twice", r.ID)
		}
		byID[r.ID] = r
	}
	var failed []string
	for _, r := range results {
		if r.Failed() {
			failed = append(failed, r.ID)
		}
	}
	sort.Strings(failed)
	for _, id := range failed {
		v.add(FileResults, "spec %s %s", id, byID[id].State)
	}
	if m.KitVersion == "" || (m.Mode != ModeCloud && m.Mode != ModeLoopback) {
		return
	}
	list := m.Mode
	if m.KitMode != "" {
		list = m.KitMode
	}
	required, err := Required(m.KitVersion, list)
	if err != nil {
		v.add(FileManifest, "%v", strings.TrimPrefix(err.Error(), "evidence: "))
		return
	}
	for _, id := range required {
		r, ok := byID[id]
		switch {
		case !ok:
			v.add(FileResults, "required spec %s is missing", id)
		case r.Skipped():
			v.add(FileResults, "required spec %s was %s: %s", id, r.State, orDash(firstLine(r.Message)))
		}
	}
}

func wellFormedXML(data []byte) error {
	d := xml.NewDecoder(bytes.NewReader(data))
	for {
		_, err := d.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// IsLoopbackHost reports whether an API host (with or without a port) is
// not a real provider's: empty, "in-process", localhost, a loopback or
// unspecified IP address, or a name under a reserved test or local domain
// (.test, .localhost, .invalid, .example, .local).
func IsLoopbackHost(host string) bool {
	h := strings.ToLower(strings.TrimSpace(host))
	if h == "" || h == "in-process" {
		return true
	}
	if hh, _, err := net.SplitHostPort(h); err == nil {
		h = hh
	}
	h = strings.Trim(h, "[]")
	h = strings.TrimSuffix(h, ".")
	if ip := net.ParseIP(h); ip != nil {
		return ip.IsLoopback() || ip.IsUnspecified()
	}
	if h == "localhost" {
		return true
	}
	for _, suffix := range []string{".test", ".localhost", ".invalid", ".example", ".local"} {
		if strings.HasSuffix(h, suffix) {
			return true
		}
	}
	return false
}
