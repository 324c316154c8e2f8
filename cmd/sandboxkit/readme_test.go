package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/sandboxkit/sandboxkit/server"
)

// The README's tables and snippets are checked against the code they
// describe, so that a flag, a tool or an example cannot change without them.

func readREADME(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// section returns the README text from the heading line to the next heading
// of the same or a higher level.
func section(t *testing.T, readme, heading string) string {
	t.Helper()
	start := strings.Index(readme, "\n"+heading+"\n")
	if start < 0 {
		t.Fatalf("README has no heading %q", heading)
	}
	rest := readme[start+len(heading)+2:]
	level := strings.Repeat("#", strings.Count(strings.Fields(heading)[0], "#"))
	re := regexp.MustCompile(`(?m)^#{1,` + strconv.Itoa(len(level)) + `} `)
	if loc := re.FindStringIndex(rest); loc != nil {
		rest = rest[:loc[0]]
	}
	return rest
}

var flagInCell = regexp.MustCompile("`(--[a-z0-9-]+)")

// tableFlags returns every --flag named in the first cell of a table row.
func tableFlags(text string) []string {
	var flags []string
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "| `--") {
			continue
		}
		cell := strings.SplitN(line[1:], "|", 2)[0]
		for _, m := range flagInCell.FindAllStringSubmatch(cell, -1) {
			flags = append(flags, m[1])
		}
	}
	slices.Sort(flags)
	return flags
}

func commandFlags(t *testing.T, name string) []string {
	t.Helper()
	cmd, _, err := newRootCommand().Find([]string{name})
	if err != nil {
		t.Fatal(err)
	}
	var flags []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Name != "help" && !f.Hidden {
			flags = append(flags, "--"+f.Name)
		}
	})
	slices.Sort(flags)
	return flags
}

func TestREADMEServeFlagsMatchTheCommand(t *testing.T) {
	got := tableFlags(section(t, readREADME(t), "## Use the reference server"))
	want := commandFlags(t, "serve")
	if !slices.Equal(got, want) {
		t.Errorf("README's serve flag table lists %v;\nsandboxkit serve has %v", got, want)
	}
}

var toolRow = regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| [^|]+\\| ([^|]*)\\|$")

func TestREADMEToolTableMatchesTheServer(t *testing.T) {
	rows := toolRow.FindAllStringSubmatch(section(t, readREADME(t), "## Use the reference server"), -1)
	documented := map[string]string{}
	var order []string
	for _, r := range rows {
		documented[r[1]] = strings.TrimSpace(r[2])
		order = append(order, r[1])
	}
	var names []string
	for _, tool := range server.AllTools(nil) {
		name := tool.Name()
		names = append(names, name)
		a := tool.Def.Annotations
		var want []string
		if a.ReadOnlyHint {
			want = append(want, "read-only")
		}
		if a.DestructiveHint != nil && *a.DestructiveHint {
			want = append(want, "destructive")
		}
		got, ok := documented[name]
		if !ok {
			t.Errorf("README's tool table has no row for %s", name)
			continue
		}
		if got != strings.Join(want, ", ") {
			t.Errorf("README says %s is %q; its annotations say %q", name, got, strings.Join(want, ", "))
		}
	}
	if !slices.Equal(order, names) {
		t.Errorf("README's tool table lists %v;\nthe server has, in order, %v", order, names)
	}
}

// TestREADMESnippetsAreExamples checks that every Go snippet in the README
// stands, line for line, in one of the runnable examples the block names
// ("<!-- example: path/to/example_test.go -->" on the line before it), so
// the snippet compiles and runs with the tests.
func TestREADMESnippetsAreExamples(t *testing.T) {
	readme := readREADME(t)
	block := regexp.MustCompile("(?s)<!-- example: ([^ ]+) -->\n```go\n(.*?)```")
	blocks := block.FindAllStringSubmatch(readme, -1)
	if n := strings.Count(readme, "```go"); n != len(blocks) || n == 0 {
		t.Fatalf("README has %d Go snippets, %d of them marked with the example that holds them", n, len(blocks))
	}
	for _, b := range blocks {
		src, err := os.ReadFile(filepath.Join("..", "..", b[1]))
		if err != nil {
			t.Errorf("README snippet names %s: %v", b[1], err)
			continue
		}
		want := codeLines(b[2])
		if !containsRun(codeLines(string(src)), want) {
			t.Errorf("README snippet is not in %s as written:\n%s", b[1], strings.Join(want, "\n"))
		}
	}
}

// codeLines returns the trimmed lines of Go source, without blank lines, the
// func line and lone closing braces: a snippet's enclosing function may be a
// test function in the README and a closure in the example.
func codeLines(src string) []string {
	var out []string
	for _, l := range strings.Split(src, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || l == "}" || strings.HasPrefix(l, "func ") || strings.HasPrefix(l, "_ = func") {
			continue
		}
		out = append(out, l)
	}
	return out
}

func containsRun(lines, run []string) bool {
	for i := 0; i+len(run) <= len(lines); i++ {
		if slices.Equal(lines[i:i+len(run)], run) {
			return true
		}
	}
	return false
}
