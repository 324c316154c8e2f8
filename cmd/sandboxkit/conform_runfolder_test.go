package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// conform writes what it is given no path for (the details file, a
// pathless --junit-report) into a run folder under the user's cache, never
// into the working directory or $TMPDIR.
func TestConformOutputsGoToTheRunFolder(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	f := &conformFlags{}
	f.run.JUnitReport = junitInRunFolder
	if err := f.resolveOutputs("run-1"); err != nil {
		t.Fatal(err)
	}
	folder := filepath.Join(cache, "sandboxkit", "runs", "run-1")
	if f.run.JUnitReport != filepath.Join(folder, "junit.xml") || f.detailsFile != filepath.Join(folder, detailsName) {
		t.Errorf("junit %q, details %q: want both in %s", f.run.JUnitReport, f.detailsFile, folder)
	}
	file, err := openDetails(f)
	if err != nil {
		t.Fatal(err)
	}
	_ = file.Close()
	if filepath.Dir(file.Name()) != folder {
		t.Errorf("details file %s is not in the run folder %s", file.Name(), folder)
	}

	given := &conformFlags{detailsFile: filepath.Join(t.TempDir(), "d.log")}
	given.run.JUnitReport = "out/junit.xml"
	if err := given.resolveOutputs("run-2"); err != nil {
		t.Fatal(err)
	}
	if given.run.JUnitReport != "out/junit.xml" || given.runFolder != "" {
		t.Errorf("paths given were changed: junit %q, run folder %q", given.run.JUnitReport, given.runFolder)
	}
}

// --junit-report stands alone or takes a path, written with "=" or a space.
func TestConformJUnitReportFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--junit-report"}, junitInRunFolder},
		{[]string{"--junit-report", "r.xml"}, "r.xml"},
		{[]string{"--junit-report=r.xml", "--procs", "1"}, "r.xml"},
		{[]string{"--procs", "1"}, ""},
	} {
		cmd := newConformCommand()
		if err := cmd.ParseFlags(c.args); err != nil {
			t.Fatal(err)
		}
		if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
			t.Errorf("%q: %v", c.args, err)
			continue
		}
		if got := cmd.Flags().Lookup("junit-report").Value.String(); got != c.want {
			t.Errorf("%q: --junit-report = %q, want %q", c.args, got, c.want)
		}
	}
	cmd := newConformCommand()
	if err := cmd.ParseFlags([]string{"stray"}); err != nil {
		t.Fatal(err)
	}
	if err := cmd.ValidateArgs(cmd.Flags().Args()); err == nil {
		t.Error("an argument without --junit-report before it must be refused")
	}
}

// Old run folders are removed beyond keptRunFolders; the new one stays.
func TestRunFoldersDoNotPileUp(t *testing.T) {
	root := t.TempDir()
	for i := range keptRunFolders + 5 {
		if err := os.Mkdir(filepath.Join(root, fmt.Sprintf("20261201T0000%02dZ-old", i)), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := makeRunFolder(filepath.Join(root, "20261101T000000Z-new")); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != keptRunFolders {
		t.Errorf("%d run folders left, want %d", len(entries), keptRunFolders)
	}
	if _, err := os.Stat(filepath.Join(root, "20261101T000000Z-new")); err != nil {
		t.Errorf("the new run folder was removed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "20261201T000000Z-old")); err == nil {
		t.Error("the oldest run folder was kept")
	}
}

// A server command with --fake makes a server that ignores the kit's fake:
// conform says so before the run.
func TestConformWarnsOfServeFake(t *testing.T) {
	for _, c := range []struct {
		command []string
		warns   bool
	}{
		{[]string{"sandboxkit", "serve", "--fake"}, true},
		{[]string{"./bin/sandboxkit", "serve", "--fake=true", "--http", ":0"}, true},
		{[]string{"sandboxkit", "serve", "--provider-timeout", "2s"}, false},
		{[]string{"./srv", "--fake-addr", "x"}, false},
	} {
		var out bytes.Buffer
		warnServerCmd(&out, c.command, false)
		if got := strings.Contains(out.String(), "ignores the kit's fake provider"); got != c.warns {
			t.Errorf("%q: warned %v, want %v\n%s", c.command, got, c.warns, out.String())
		}
	}
	out, err := run(t, "conform", "--server-cmd", "sandboxkit serve --fake", "--server-url", "http://127.0.0.1:1/mcp", "--list")
	if err != nil || strings.Contains(out, "WARNING") {
		t.Errorf("--list runs nothing and needs no warning: %v\n%s", err, out)
	}
}

// conform --help opens with its flags; the long description follows.
func TestConformHelpLeadsWithFlags(t *testing.T) {
	out, err := run(t, "conform", "--help")
	if err != nil {
		t.Fatal(err)
	}
	flags, details := strings.Index(out, "\nFlags:\n"), strings.Index(out, "\nDetails:\n")
	if flags < 0 || details < 0 || flags > details || flags > 200 {
		t.Errorf("conform --help must open with its flags (Flags: at %d, Details: at %d)\n%.400s", flags, details, out)
	}
	if !strings.Contains(out, "--server-cmd") || !strings.Contains(out, "conform runs the conformance kit") {
		t.Errorf("conform --help lacks its flags or its description\n%s", out)
	}
}
