package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sandboxkit/sandboxkit/conformance/cloudstate"
)

// detailsNote heads the console's last line, the details file's path.
const detailsNote = "details of every spec (Ginkgo's output: failures in full, with transcripts and server logs)"

// detailsName is the details file's name in the run folder.
const detailsName = "details.log"

// openDetails creates the file that receives Ginkgo's full output of a
// run: --details-file, else details.log in the run folder
// (resolveOutputs).
func openDetails(f *conformFlags) (*os.File, error) {
	if f.detailsFile == "" {
		if err := f.resolveOutputs(cloudstate.NewRunID()); err != nil {
			return nil, err
		}
	}
	if f.runFolder != "" && filepath.Dir(f.detailsFile) == f.runFolder {
		if err := makeRunFolder(f.runFolder); err != nil {
			return nil, err
		}
	}
	file, err := os.Create(f.detailsFile)
	if err != nil {
		return nil, fmt.Errorf("details file: %w", err)
	}
	return file, nil
}

// lastLines returns the last n lines of s, each ending in a newline.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n") + "\n"
}
