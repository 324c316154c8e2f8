package evidence

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

const testKit = "0.1.0"

// sampleBundle is a bundle of the mode whose every required spec passed.
func sampleBundle(t *testing.T, mode Mode) *Bundle {
	t.Helper()
	ids, err := Required(testKit, mode)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	m := Manifest{
		Mode: mode, RunID: "20261202T100000Z-test", KitVersion: testKit, KitRevision: "0123456789abcdef",
		GoVersion: "go1.26.8", Server: Server{Name: "sandboxkit-reference", Version: "0.1.0"}, Transport: "in-process",
		ProviderID: "sandboxkit-fake", APIHost: "in-process", StartedAt: start, EndedAt: start.Add(time.Minute),
		Config: map[string]any{"mode": mode, "headers": map[string]string{"Authorization": "[REDACTED]"}},
	}
	if mode == ModeCloud {
		m.ProviderID, m.APIHost, m.Region = "e2b", "api.e2b.app", "us-east-1"
		m.Cleanup = &Cleanup{Tracked: 3, Gone: 2, DestroyedByKit: 1}
	}
	b := &Bundle{Manifest: m, ServerLog: "level=INFO msg=\"session closed\"\n"}
	for i, id := range ids {
		fam, _, _ := strings.Cut(id, ".")
		b.Results = append(b.Results, SpecResult{ID: id, Title: "does " + id, Family: fam, Rules: []string{"META-1"}, State: "passed", DurationMS: int64(i)})
		b.Transcript = append(b.Transcript, Exchange{Spec: id, Seq: 1, Session: 1, Tool: "get_sandbox",
			Arguments: json.RawMessage(`{"sandbox_id":"abc"}`), Result: json.RawMessage(`{"structuredContent":{"sandbox_id":"abc"}}`)})
	}
	b.Results = append(b.Results, SpecResult{ID: "protocol.transports-identical", Family: "protocol", Rules: []string{"TOOLS-2"}, State: "skipped", Message: "needs two transports"})
	return b
}

func write(t *testing.T, b *Bundle, r *Redactor) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "bundle")
	if err := Write(dir, b, r); err != nil {
		t.Fatal(err)
	}
	return dir
}

func problems(t *testing.T, err error) []Problem {
	t.Helper()
	var verr *VerifyError
	if !errors.As(err, &verr) {
		t.Fatalf("want a *VerifyError, got %v", err)
	}
	return verr.Problems
}

// expectProblem fails unless one problem concerns file and contains text.
func expectProblem(t *testing.T, err error, file, text string) {
	t.Helper()
	for _, p := range problems(t, err) {
		if p.File == file && strings.Contains(p.Message, text) {
			return
		}
	}
	t.Errorf("no problem %s: ...%s... in\n%v", file, text, err)
}

func TestWriteThenVerify(t *testing.T) {
	for _, mode := range []Mode{ModeLoopback, ModeCloud} {
		t.Run(string(mode), func(t *testing.T) {
			b := sampleBundle(t, mode)
			dir := write(t, b, nil)
			if err := Verify(dir, nil); err != nil {
				t.Fatalf("a fresh bundle does not verify: %v", err)
			}
			err := Verify(dir, &VerifyOptions{Cloud: true})
			if mode == ModeCloud && err != nil {
				t.Errorf("cloud bundle, cloud verification: %v", err)
			}
			if mode == ModeLoopback {
				if err == nil {
					t.Fatal("loopback evidence verified as cloud evidence")
				}
				expectProblem(t, err, FileManifest, "never verifies as cloud evidence")
			}
			got, err := Read(dir)
			if err != nil {
				t.Fatal(err)
			}
			if got.Manifest.Totals != Count(b.Results) || len(got.Results) != len(b.Results) || len(got.Transcript) != len(b.Transcript) {
				t.Errorf("read back %+v, %d results, %d exchanges", got.Manifest.Totals, len(got.Results), len(got.Transcript))
			}
			sums, _ := os.ReadFile(filepath.Join(dir, FileChecksums))
			for _, name := range bundleFiles {
				data, _ := os.ReadFile(filepath.Join(dir, name))
				sum := sha256.Sum256(data)
				if !bytes.Contains(sums, []byte(hex.EncodeToString(sum[:])+"  "+name+"\n")) {
					t.Errorf("SHA256SUMS lacks a sha256sum(1) line for %s", name)
				}
			}
		})
	}
}

func TestWriteIsDeterministic(t *testing.T) {
	a := write(t, sampleBundle(t, ModeCloud), NewRedactor("some-secret-value"))
	b := write(t, sampleBundle(t, ModeCloud), NewRedactor("some-secret-value"))
	for _, name := range append(bundleFiles, FileChecksums) {
		x, _ := os.ReadFile(filepath.Join(a, name))
		y, _ := os.ReadFile(filepath.Join(b, name))
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs between two writes of the same bundle", name)
		}
	}
}

func TestWriteRefusesNonEmptyDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(dir, sampleBundle(t, ModeLoopback), nil); err == nil {
		t.Fatal("Write into a non-empty directory must fail")
	}
	empty := t.TempDir()
	if err := Write(empty, sampleBundle(t, ModeLoopback), nil); err != nil {
		t.Fatalf("Write into an empty directory: %v", err)
	}
}

func TestVerifyNamesTamperedFiles(t *testing.T) {
	dir := write(t, sampleBundle(t, ModeCloud), nil)
	path := filepath.Join(dir, FileResults)
	data, _ := os.ReadFile(path)
	if err := os.WriteFile(path, bytes.Replace(data, []byte(`"failed"`), []byte(`"passed"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	data = bytes.Replace(data, []byte(`"duration_ms": 1`), []byte(`"duration_ms": 2`), 1)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "extra.txt"), []byte("hi"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, FileServerLog)); err != nil {
		t.Fatal(err)
	}
	err := Verify(dir, nil)
	expectProblem(t, err, FileResults, "does not match SHA256SUMS")
	expectProblem(t, err, "extra.txt", "not covered by SHA256SUMS")
	expectProblem(t, err, FileServerLog, "missing")
	if len(problems(t, err)) < 3 {
		t.Errorf("one error must list every problem: %v", err)
	}
}

func TestVerifyRequiresEveryRequiredSpecPassed(t *testing.T) {
	b := sampleBundle(t, ModeCloud)
	missing := b.Results[0].ID
	skipped := b.Results[1].ID
	failed := b.Results[2].ID
	b.Results = b.Results[1:]
	b.Results[0].State, b.Results[0].Message = "skipped", "the server does not advertise run_command"
	b.Results[1].State, b.Results[1].Message = "failed", "boom"
	err := Verify(write(t, b, nil), nil)
	expectProblem(t, err, FileResults, "required spec "+missing+" is missing")
	expectProblem(t, err, FileResults, "required spec "+skipped+" was skipped")
	expectProblem(t, err, FileResults, "spec "+failed+" failed")
}

func TestVerifyUnknownKitVersionAndMode(t *testing.T) {
	b := sampleBundle(t, ModeLoopback)
	b.Manifest.KitVersion = "9.9.9"
	expectProblem(t, Verify(write(t, b, nil), nil), FileManifest, "no required-spec list")
	b = sampleBundle(t, ModeLoopback)
	b.Manifest.Mode = "simulated"
	expectProblem(t, Verify(write(t, b, nil), nil), FileManifest, "must state cloud or loopback")
}

func TestVerifyCloudEvidenceNeedsARealHostAndRevision(t *testing.T) {
	for _, host := range []string{"127.0.0.1:4010", "localhost:3000", "[::1]:80", "api.fake.sandboxkit.test", "in-process", ""} {
		b := sampleBundle(t, ModeCloud)
		b.Manifest.APIHost = host
		expectProblem(t, Verify(write(t, b, nil), &VerifyOptions{Cloud: true}), FileManifest, "loopback or a reserved test name")
	}
	b := sampleBundle(t, ModeCloud)
	b.Manifest.KitRevision = "unknown"
	expectProblem(t, Verify(write(t, b, nil), nil), FileManifest, "unknown kit revision")
}

func TestIsLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"api.e2b.app": false, "api.e2b.app:443": false, "10.0.0.5:8080": false, "eu.api.acme.example.com": false,
		"127.0.0.1": true, "127.3.4.5:99": true, "[::1]:8080": true, "0.0.0.0:1": true, "localhost": true,
		"x.localhost": true, "api.sandboxkit.test": true, "": true, "in-process": true, "box.local": true,
	} {
		if got := IsLoopbackHost(host); got != want {
			t.Errorf("IsLoopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
}

// The secrets a run may see, by value and by shape.
const (
	knownToken = "Zq8rT4vN2mK7pL1x"                             // an envdAccessToken the run saw
	knownKey   = "e2b_0123456789abcdef0123456789abcdef01234567" // the API key
	unknownKey = "e2b_fedcba9876543210fedcba9876543210fedcba98" // a key nobody told the redactor about
)

func TestRedactionByValueAndPattern(t *testing.T) {
	b := sampleBundle(t, ModeCloud)
	leaky := fmt.Sprintf(`{"content":[{"type":"text","text":"token %s, key %s, other %s"}],`+
		`"structuredContent":{"envdAccessToken":"opaque-value-1","note":"Authorization: Bearer abcdefghijklmnopqrstuvwxyz","url":"https://user:pw1234@api.example.com/x","c":"canary-envd-0123456789abcdef01234567","id":"iabc-canaryclient0123456789abcdef01234567"}}`,
		strings.ToUpper(knownToken), knownKey, unknownKey)
	b.Transcript = append(b.Transcript, Exchange{Spec: b.Results[0].ID, Seq: 2, Session: 1, Tool: "get_sandbox",
		Arguments: json.RawMessage(`{}`), Result: json.RawMessage(leaky)})
	b.ServerLog += "debug: X-Access-Token: " + knownToken + "\n"
	b.Results[0].Message = "saw " + knownKey
	b.Results[0].State = "failed"
	dir := write(t, b, NewRedactor(knownToken, knownKey))
	secrets := []string{knownToken, knownKey, unknownKey, "opaque-value-1", "abcdefghijklmnopqrstuvwxyz", "pw1234", "canary-envd-0123456789abcdef01234567", "canaryclient0123456789abcdef01234567"}
	for _, name := range append(bundleFiles, FileChecksums) {
		data, _ := os.ReadFile(filepath.Join(dir, name))
		lower := strings.ToLower(string(data))
		for _, s := range secrets {
			if strings.Contains(lower, strings.ToLower(s)) {
				t.Errorf("%s still holds %q", name, s)
			}
		}
	}
	tr, _ := os.ReadFile(filepath.Join(dir, FileTranscript))
	if n := bytes.Count(tr, []byte(Redacted)); n < 6 {
		t.Errorf("the transcript shows %d redactions, want every secret replaced by %s:\n%s", n, Redacted, tr)
	}
	var ex []Exchange
	if ex, _ = parseTranscript(tr); len(ex) != len(b.Transcript) {
		t.Errorf("the redacted transcript no longer parses: %d of %d exchanges", len(ex), len(b.Transcript))
	}
	// The bundle verifies apart from the failed spec it records.
	for _, p := range problems(t, Verify(dir, nil)) {
		if !strings.Contains(p.Message, "failed") {
			t.Errorf("unexpected problem: %s", p)
		}
	}
}

func TestWriteRefusesASecretRedactionCannotRemove(t *testing.T) {
	b := sampleBundle(t, ModeLoopback)
	// The API key, base64-encoded at an odd offset (an upload of a file
	// holding it): no pattern matches, redaction by value cannot see it.
	enc := base64.StdEncoding.EncodeToString([]byte("xKEY=" + knownKey + "\n"))
	b.Transcript = append(b.Transcript, Exchange{Spec: b.Results[0].ID, Seq: 2, Session: 1, Tool: "upload_file",
		Arguments: json.RawMessage(`{"path":"/tmp/env","data_base64":"` + enc + `"}`), Result: json.RawMessage(`{}`)})
	parent := t.TempDir()
	dir := filepath.Join(parent, "bundle")
	err := Write(dir, b, NewRedactor(knownKey))
	var leak *LeakError
	if !errors.As(err, &leak) {
		t.Fatalf("Write of a bundle holding an encoded secret: %v, want a *LeakError", err)
	}
	if len(leak.Findings) == 0 || !strings.Contains(leak.Findings[0], FileTranscript) || strings.Contains(err.Error(), knownKey) {
		t.Errorf("findings %v: want the file named and the secret not shown", leak.Findings)
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 0 {
		t.Errorf("a refused bundle left files behind: %v", entries)
	}
}

func TestVerifyFindsSecretPatterns(t *testing.T) {
	dir := write(t, sampleBundle(t, ModeLoopback), nil)
	// Plant a key after writing and fix SHA256SUMS, so only the scan can
	// notice.
	path := filepath.Join(dir, FileSummary)
	data, _ := os.ReadFile(path)
	if err := os.WriteFile(path, append(data, []byte("key "+unknownKey+"\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, name := range bundleFiles {
		files[name], _ = os.ReadFile(filepath.Join(dir, name))
	}
	if err := os.WriteFile(filepath.Join(dir, FileChecksums), checksums(files), 0o644); err != nil {
		t.Fatal(err)
	}
	err := Verify(dir, nil)
	expectProblem(t, err, FileSummary, "secret pattern e2b-api-key")
	if len(problems(t, err)) != 1 {
		t.Errorf("want only the secret reported: %v", err)
	}
}

func TestRedactorDoesNotRematch(t *testing.T) {
	r := NewRedactor(knownToken, "short") // "short" is below MinSecretLen
	if r.Len() != 1 {
		t.Errorf("Len = %d, want 1 (values shorter than %d are ignored)", r.Len(), MinSecretLen)
	}
	in := []byte(`Authorization: Bearer abcdefghijklmnopqrstuv x-api-key: ` + knownKey + ` "apiKey": "k-123456" ` + knownToken + ` https://a:b@h/`)
	out := r.Redact(in)
	if again := r.Redact(out); !bytes.Equal(again, out) {
		t.Errorf("redacting twice changed the text:\n%s\n%s", out, again)
	}
	if f := r.Scan(out); len(f) != 0 {
		t.Errorf("redacted text still scans as secret: %v\n%s", f, out)
	}
	if f := r.Scan(in); len(f) == 0 {
		t.Error("the scan found nothing in the raw text")
	}
	if got := r.RedactString("Bearer authentication is required"); got != "Bearer authentication is required" {
		t.Errorf("prose was redacted: %q", got)
	}
}

func TestRender(t *testing.T) {
	b := sampleBundle(t, ModeLoopback)
	b.Results[0].State, b.Results[0].Message = "failed", "went <wrong>"
	b.Transcript = append(b.Transcript, Exchange{Spec: b.Results[0].ID, Seq: 2, Session: 1, Tool: "run_command",
		Arguments: json.RawMessage(`{"command":"echo '<script>alert(1)</script>'"}`), Result: json.RawMessage(`{"structuredContent":{"stdout":"<script>alert(1)</script>"}}`)})
	dir := write(t, b, nil)
	var out bytes.Buffer
	if err := Render(&out, dir); err != nil {
		t.Fatal(err)
	}
	page := out.String()
	for _, want := range []string{"<table>", "<th>spec</th>", b.Results[0].ID, b.Results[5].ID, "LOOPBACK run", "Verification failed",
		"run_command", "&lt;script&gt;", "SHA256SUMS", b.Manifest.RunID, `href="#spec-` + b.Results[0].ID + `"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	for _, bad := range []string{"<script>", "<link", "src=", `href="http`, "@import"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page holds %q: it must be self-contained and escaped", bad)
		}
	}
	outFile := filepath.Join(t.TempDir(), "page.html")
	if err := RenderFile(dir, outFile); err != nil {
		t.Fatal(err)
	}
	if err := Verify(filepath.Join(dir), nil); err != nil && len(problems(t, err)) != 1 {
		t.Errorf("rendering changed the bundle: %v", err)
	}
}

func TestRequiredLists(t *testing.T) {
	if !slices.Contains(RequiredVersions(), testKit) {
		t.Fatalf("no required-spec list for kit %s: %v", testKit, RequiredVersions())
	}
	for _, mode := range Modes() {
		ids, err := Required(testKit, mode)
		if err != nil || len(ids) == 0 || !slices.IsSorted(ids) {
			t.Errorf("Required(%s): %d ids, sorted %v, %v", mode, len(ids), slices.IsSorted(ids), err)
		}
	}
	lists := map[Mode][]string{ModeCloud: {"b.x", "a.y"}, ModeLoopback: {"c.z"}}
	got, err := ParseRequired(FormatRequired("1.2.3", lists))
	if err != nil || !slices.Equal(got[ModeCloud], []string{"a.y", "b.x"}) || !slices.Equal(got[ModeLoopback], []string{"c.z"}) {
		t.Errorf("round trip: %v, %v", got, err)
	}
	for _, bad := range []string{"a.b\n", "[cloud]\na b\n", "[mars]\n", "[cloud]\na.b\na.b\n", "[cloud]\n[cloud]\n"} {
		if _, err := ParseRequired(bad); err == nil {
			t.Errorf("ParseRequired(%q) accepted a malformed list", bad)
		}
	}
	if _, err := Required("../../etc/passwd", ModeCloud); err == nil {
		t.Error("a path as kit version must be refused")
	}
}

// TestVerifyFailsOnAnyChangedByte changes, deletes or adds one byte of
// each file of a verifying bundle (every byte of the first line of
// SHA256SUMS, a spread of the rest): each time the bundle must no longer
// verify.
func TestVerifyFailsOnAnyChangedByte(t *testing.T) {
	dir := write(t, sampleBundle(t, ModeCloud), nil)
	if err := Verify(dir, &VerifyOptions{Cloud: true}); err != nil {
		t.Fatalf("the fresh bundle does not verify: %v", err)
	}
	for _, name := range append(append([]string(nil), bundleFiles...), FileChecksums) {
		path := filepath.Join(dir, name)
		orig, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var positions []int
		if name == FileChecksums {
			for i := 0; i <= bytes.IndexByte(orig, '\n'); i++ {
				positions = append(positions, i)
			}
		}
		for i := 0; i < len(orig); i += max(1, len(orig)/8) {
			positions = append(positions, i)
		}
		if n := len(orig); n > 0 {
			positions = append(positions, n-1)
		}
		try := func(what string, data []byte) {
			t.Helper()
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := Verify(dir, nil); err == nil {
				t.Errorf("%s: %s: the bundle still verifies", name, what)
			}
		}
		for _, i := range positions {
			changed := bytes.Clone(orig)
			changed[i] ^= 0x01
			try(fmt.Sprintf("byte %d changed", i), changed)
			try(fmt.Sprintf("byte %d deleted", i), append(bytes.Clone(orig[:i]), orig[i+1:]...))
		}
		try("a byte appended", append(bytes.Clone(orig), '\n'))
		if name == FileChecksums {
			lines := strings.SplitAfter(string(orig), "\n")
			lines[0], lines[1] = lines[1], lines[0]
			try("two lines swapped", []byte(strings.Join(lines, "")))
			try("CRLF line ends", bytes.ReplaceAll(orig, []byte("\n"), []byte("\r\n")))
		}
		if err := os.WriteFile(path, orig, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := Verify(dir, &VerifyOptions{Cloud: true}); err != nil {
		t.Fatalf("the restored bundle does not verify: %v", err)
	}
}

func TestCheckDir(t *testing.T) {
	parent := t.TempDir()
	if err := CheckDir(filepath.Join(parent, "absent")); err != nil {
		t.Errorf("an absent directory: %v", err)
	}
	if err := CheckDir(parent); err != nil {
		t.Errorf("an empty directory: %v", err)
	}
	if err := os.WriteFile(filepath.Join(parent, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckDir(parent); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("a non-empty directory: %v", err)
	}
	if err := CheckDir(filepath.Join(parent, "x")); err == nil {
		t.Error("a file is no bundle directory")
	}
}

// TestCleanupNotCreatedIsShown: sandboxes a server claimed that the run did
// not create are named in the summary and on the rendered page.
func TestCleanupNotCreatedIsShown(t *testing.T) {
	b := sampleBundle(t, ModeCloud)
	b.Manifest.Cleanup.NotCreated = []string{"sbxsomeoneelses0001"}
	dir := write(t, b, nil)
	summary, _ := os.ReadFile(filepath.Join(dir, FileSummary))
	var page bytes.Buffer
	if err := Render(&page, dir); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{FileSummary: string(summary), "the page": page.String()} {
		if !strings.Contains(text, "sbxsomeoneelses0001") || !strings.Contains(text, "not created by the run") {
			t.Errorf("%s does not name the sandbox the run did not create", name)
		}
	}
}
