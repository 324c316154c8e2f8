package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// junitInRunFolder is --junit-report given without a path: the report goes
// to the run folder.
const junitInRunFolder = "(run folder)"

// keptRunFolders is how many run folders stay in the cache; older ones are
// removed when a new one is made, so that they do not pile up.
const keptRunFolders = 20

// runsDir is where conform keeps its run folders:
// os.UserCacheDir()/sandboxkit/runs.
func runsDir() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("run folder: %w", err)
	}
	return filepath.Join(cache, "sandboxkit", "runs"), nil
}

// makeRunFolder creates the run folder dir (a folder of runsDir) and
// removes the oldest others beyond keptRunFolders. Files a run writes
// without a path given (the details file, a pathless --junit-report) go
// there, never into the working directory or $TMPDIR.
func makeRunFolder(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("run folder: %w", err)
	}
	pruneRunFolders(filepath.Dir(dir), filepath.Base(dir))
	return nil
}

// pruneRunFolders removes the oldest run folders in root beyond
// keptRunFolders, never keep's. Run IDs start with their UTC time, so name
// order is age order for the default ones; a failure leaves folders behind
// and is not an error of the run.
func pruneRunFolders(root, keep string) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != keep {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	for len(names) >= keptRunFolders {
		_ = os.RemoveAll(filepath.Join(root, names[0]))
		names = names[1:]
	}
}

// resolveOutputs points the outputs given without a path at the run
// folder of runID: --junit-report alone, and the details file when
// --details-file is not given. The folder is made when the details file
// is opened (openDetails), or by Ginkgo for the report.
func (f *conformFlags) resolveOutputs(runID string) error {
	if f.run.JUnitReport != junitInRunFolder && f.detailsFile != "" {
		return nil
	}
	root, err := runsDir()
	if err != nil {
		return err
	}
	f.runFolder = filepath.Join(root, runID)
	if f.run.JUnitReport == junitInRunFolder {
		f.run.JUnitReport = filepath.Join(f.runFolder, "junit.xml")
	}
	if f.detailsFile == "" {
		f.detailsFile = filepath.Join(f.runFolder, detailsName)
	}
	return nil
}

// reportArgs accepts the one positional argument conform can get: the
// path of "--junit-report PATH" written with a space, which pflag leaves
// as an argument because --junit-report may also stand alone.
func (f *conformFlags) reportArgs(args []string) error {
	switch {
	case len(args) == 0:
		return nil
	case len(args) == 1 && f.run.JUnitReport == junitInRunFolder && !strings.HasPrefix(args[0], "-"):
		f.run.JUnitReport = args[0]
		return nil
	}
	return fmt.Errorf("conform takes no arguments, got %q (a report path is --junit-report PATH)", args)
}
