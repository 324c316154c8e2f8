package main

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sandboxkit/sandboxkit/conformance"
)

// The repository's documents are checked against what they describe: the
// catalog's counts, the files their links and lists name, and the
// references a reader can follow.

// repoRoot is the repository's root, seen from this package.
const repoRoot = "../.."

// repoFiles returns the repository's files (relative, slash-separated)
// whose names end in one of exts, without the folders skippedDir names.
func repoFiles(t *testing.T, exts ...string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != repoRoot && skippedDir(d.Name()) {
			return filepath.SkipDir
		}
		if !d.IsDir() && slices.ContainsFunc(exts, func(ext string) bool { return strings.HasSuffix(d.Name(), ext) }) {
			rel, _ := filepath.Rel(repoRoot, path)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// skippedDir reports whether a folder holds no files of the repository's
// own: Git's, installed packages, hidden tool state (but .ci and .github).
func skippedDir(name string) bool {
	switch name {
	case ".ci", ".github":
		return false
	case "node_modules", "site-packages", "__pycache__":
		return true
	}
	return strings.HasPrefix(name, ".")
}

// TestREADMECountsComeFromTheCatalog checks the README's spec and family
// counts against conformance.Specs().
func TestREADMECountsComeFromTheCatalog(t *testing.T) {
	specs := conformance.Specs()
	families := map[conformance.Family]bool{}
	cloudOnly := 0
	for _, s := range specs {
		families[s.Family] = true
		if s.CloudOnly {
			cloudOnly++
		}
	}
	readme := readREADME(t)
	status := regexp.MustCompile(`(\d+) specs in (\d+) families \((\d+) against the fake, (\d+) cloud-only\)`).FindStringSubmatch(readme)
	if status == nil {
		t.Fatal(`README's status table lacks "N specs in N families (N against the fake, N cloud-only)"`)
	}
	want := []int{len(specs), len(families), len(specs) - cloudOnly, cloudOnly}
	for i, what := range []string{"specs", "families", "specs against the fake", "cloud-only specs"} {
		if got, _ := strconv.Atoi(status[i+1]); got != want[i] {
			t.Errorf("README says %d %s; the catalog has %d", got, what, want[i])
		}
	}
	whole := regexp.MustCompile(`the (\d+) specs that need no real provider, (\d+) runs over both\s+MCP eras`).FindStringSubmatch(readme)
	if whole == nil {
		t.Fatal(`README lacks "the N specs that need no real provider, N runs over both MCP eras"`)
	}
	if got, _ := strconv.Atoi(whole[1]); got != want[2] {
		t.Errorf("README says conform runs %d specs against the fake; the catalog has %d", got, want[2])
	}
	runs := 0
	for _, s := range specs {
		if !s.CloudOnly {
			runs += len(s.Eras())
		}
	}
	if got, _ := strconv.Atoi(whole[2]); got != runs {
		t.Errorf("README says conform makes %d runs against the fake; the catalog has %d", got, runs)
	}
}

// markdownLink is an inline link or image target, and a code span that
// names a relative Markdown path (a reference a reader follows by hand).
var markdownLink = regexp.MustCompile("\\]\\(([^)\\s]+)(?:\\s+\"[^\"]*\")?\\)|`(\\.\\.?/[^`\\s]+\\.md)`")

// fencedCode is a fenced code block, whose text is not Markdown.
var fencedCode = regexp.MustCompile("(?ms)^```.*?^```")

// TestMarkdownLinksResolve checks that every relative link in every
// Markdown file names a file or folder that exists, and an anchor that one
// of the target's headings makes.
func TestMarkdownLinksResolve(t *testing.T) {
	for _, doc := range repoFiles(t, ".md") {
		data, err := os.ReadFile(filepath.Join(repoRoot, doc))
		if err != nil {
			t.Fatal(err)
		}
		text := fencedCode.ReplaceAllString(string(data), "")
		for _, m := range markdownLink.FindAllStringSubmatch(text, -1) {
			target := m[1] + m[2]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			if err := checkLink(doc, target); err != "" {
				t.Errorf("%s: link %s: %s", doc, target, err)
			}
		}
	}
}

// checkLink resolves target from the document doc; it returns what is
// wrong, or "".
func checkLink(doc, target string) string {
	file, anchor, _ := strings.Cut(target, "#")
	path := doc
	if file != "" {
		path = filepath.ToSlash(filepath.Join(filepath.Dir(doc), file))
		if strings.HasPrefix(path, "../") {
			return "points outside the repository"
		}
		if _, err := os.Stat(filepath.Join(repoRoot, path)); err != nil {
			return "no such file"
		}
	}
	if anchor == "" || !strings.HasSuffix(path, ".md") {
		return ""
	}
	data, err := os.ReadFile(filepath.Join(repoRoot, path))
	if err != nil {
		return err.Error()
	}
	if !slices.Contains(headingAnchors(string(data)), anchor) {
		return "no heading makes anchor #" + anchor
	}
	return ""
}

// headingAnchors returns the anchors GitHub makes of a document's
// headings: lower case, punctuation dropped, spaces turned into hyphens.
func headingAnchors(doc string) []string {
	drop := regexp.MustCompile(`[^\p{L}\p{N} _-]`)
	var anchors []string
	for _, line := range strings.Split(fencedCode.ReplaceAllString(doc, ""), "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		anchors = append(anchors, strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(title), ""), " ", "-"))
	}
	return anchors
}

// issueReference is the word issue (or issues) followed by a number, with
// or without "#", or an anchor made of such a heading: a number a reader of
// the repository cannot look up. Say what the reference means instead: the rule, the document, the
// section.
var issueReference = regexp.MustCompile(`(?i)\bissues?\s+#?\d|issue-\d`)

// TestNoIssueNumbers checks code, comments and documents for issue
// numbers.
func TestNoIssueNumbers(t *testing.T) {
	for _, file := range repoFiles(t, ".go", ".md", ".mjs", ".js", ".ts", ".py", ".sh", ".yaml", ".yml", ".tmpl", ".txt", ".cfg", "run") {
		data, err := os.ReadFile(filepath.Join(repoRoot, file))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			if issueReference.MatchString(line) {
				t.Errorf("%s:%d names an issue number: %s", file, i+1, strings.TrimSpace(line))
			}
		}
	}
}

// TestCompatREADMEMatchesItsFiles checks that compat/README.md names every
// Node script of compat/ (by path or name), every folder of scripts in
// another language (`python/`: a suite with its own layout), and that
// every script it names exists.
func TestCompatREADMEMatchesItsFiles(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "compat", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	var scripts []string
	for _, f := range repoFiles(t, ".mjs", ".ts", ".py") {
		if rel, ok := strings.CutPrefix(f, "compat/"); ok {
			scripts = append(scripts, rel)
		}
	}
	for _, s := range scripts {
		named := strings.Contains(readme, s) || strings.Contains(readme, filepath.Base(s))
		if folder, _, nested := strings.Cut(s, "/"); !strings.HasSuffix(s, ".mjs") && nested {
			named = named || strings.Contains(readme, "`"+folder+"/`")
		}
		if !named {
			t.Errorf("compat/README.md does not mention %s", s)
		}
	}
	for _, m := range regexp.MustCompile("`([\\w./-]+\\.(?:mjs|ts|py))`").FindAllStringSubmatch(readme, -1) {
		named := m[1]
		if !slices.ContainsFunc(scripts, func(s string) bool { return s == named || strings.HasSuffix(s, "/"+named) }) {
			t.Errorf("compat/README.md names %s, which is not in compat/", named)
		}
	}
}

// isTestCommand reports whether line runs the module's tests: plain go test,
// or go test through gotestsum (which lists the skipped tests at the end).
func isTestCommand(line string) bool {
	return strings.HasPrefix(line, "go test ") || strings.HasPrefix(line, "go run gotest.tools/gotestsum@")
}

// TestREADMEBuildsTheBinaryFirst checks a newcomer's path through the
// README: it opens with the main command and the tests, and builds
// bin/sandboxkit before any example runs a sandboxkit binary.
func TestREADMEBuildsTheBinaryFirst(t *testing.T) {
	readme := readREADME(t)
	blocks := regexp.MustCompile("(?ms)^```(?:sh|json)\n(.*?)^```").FindAllStringSubmatch(readme, -1)
	if len(blocks) == 0 {
		t.Fatal("README has no shell blocks")
	}
	first := strings.Split(blocks[0][1], "\n")
	if len(first) < 2 || !strings.HasPrefix(first[0], "go run ./cmd/sandboxkit conform ") || !isTestCommand(first[1]) {
		t.Errorf("README's first block must open with the main command and the tests:\n%s", blocks[0][1])
	}
	binary := regexp.MustCompile(`(?:^|[\s"/])sandboxkit"?\s*(?:,|\s)`)
	built := false
	for _, b := range blocks {
		for _, line := range strings.Split(b[1], "\n") {
			code, _, _ := strings.Cut(line, "#")
			if strings.Contains(code, "go build -o bin/sandboxkit ./cmd/sandboxkit") {
				built = true
				continue
			}
			code = strings.ReplaceAll(code, "./cmd/sandboxkit", "")
			if binary.MatchString(code) && !built {
				t.Errorf("README runs a sandboxkit binary before it builds one: %s", line)
			}
		}
	}
	if !built {
		t.Error("README never builds bin/sandboxkit")
	}
}

// TestGitIgnoresWhatTheDocumentedCommandsLeave checks .gitignore against
// the files the README's commands can leave in the working tree.
func TestGitIgnoresWhatTheDocumentedCommandsLeave(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("needs git to read .gitignore as Git does")
	}
	if err := exec.Command(git, "-C", repoRoot, "rev-parse", "--is-inside-work-tree").Run(); err != nil {
		t.Skip("not in a Git work tree")
	}
	for _, path := range []string{"bin/sandboxkit", "sandboxkit", "compat/node_modules/x", "evidence/records/loopback/2026-12-04.html"} {
		if err := exec.Command(git, "-C", repoRoot, "check-ignore", "-q", "--no-index", path).Run(); err != nil {
			t.Errorf(".gitignore does not cover %s, which a documented command can leave", path)
		}
	}
}

// recordPath is a dated evidence bundle named in a document or a help
// text; placeholders ($(date -u +%F), DATE, <date>) do not match.
var recordPath = regexp.MustCompile(`evidence/records/[a-z0-9-]+/\d{4}-\d{2}-\d{2}[\w.-]*`)

// TestNamedEvidenceBundlesExist checks that every dated bundle the
// documents and the command's help name is committed: an example a reader
// can run, not one that looks real and is not.
func TestNamedEvidenceBundlesExist(t *testing.T) {
	texts := map[string]string{}
	for _, doc := range repoFiles(t, ".md") {
		texts[doc] = readRepoFile(t, doc)
	}
	for _, c := range newRootCommand().Commands() {
		texts["sandboxkit "+c.Name()+" --help"] = c.Long
		for _, sub := range c.Commands() {
			texts["sandboxkit "+c.Name()+" "+sub.Name()+" --help"] = sub.Long
		}
	}
	for where, text := range texts {
		for _, path := range recordPath.FindAllString(text, -1) {
			if !fileExists(t, path) {
				t.Errorf("%s names the evidence bundle %s, which does not exist: name a committed one or write a placeholder", where, path)
			}
		}
	}
}
