package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// detailsNote heads the console's last line, the details file's path.
const detailsNote = "details of every spec (Ginkgo's output: failures in full, with transcripts and server logs)"

// detailsName is the details file's name next to a report.
const detailsName = "sandboxkit-details.log"

// openDetails creates the file that receives Ginkgo's full output of a
// run: --details-file, else sandboxkit-details.log in the directory of the
// JSON or JUnit report, else a new file in the temporary directory.
func openDetails(f *conformFlags) (*os.File, error) {
	path := f.detailsFile
	for _, report := range []string{f.run.JSONReport, f.run.JUnitReport} {
		if path == "" && report != "" {
			path = filepath.Join(filepath.Dir(report), detailsName)
		}
	}
	var file *os.File
	var err error
	if path == "" {
		file, err = os.CreateTemp("", "sandboxkit-details-*.log")
	} else {
		file, err = os.Create(path)
	}
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
