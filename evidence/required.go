package evidence

import (
	"bufio"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"
)

// requiredFS holds one list per kit version: required/<version>.txt, with a
// [cloud] and a [loopback] section of spec IDs. Changing a list is a
// reviewed change; the conformance package's tests keep the current
// version's list equal to its catalog.
//
//go:embed required/*.txt
var requiredFS embed.FS

// Required returns the IDs of the specs that a bundle of the given kit
// version and mode must hold, each passed, sorted.
func Required(kitVersion string, mode Mode) ([]string, error) {
	lists, err := requiredLists(kitVersion)
	if err != nil {
		return nil, err
	}
	ids, ok := lists[mode]
	if !ok {
		return nil, fmt.Errorf("evidence: the required-spec list of kit %s has no [%s] section", kitVersion, mode)
	}
	return ids, nil
}

// RequiredVersions lists the kit versions that have a required-spec list.
func RequiredVersions() []string {
	entries, _ := fs.ReadDir(requiredFS, "required")
	var out []string
	for _, e := range entries {
		if v, ok := strings.CutSuffix(e.Name(), ".txt"); ok {
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return out
}

// ParseRequired reads the text of a required-spec list: "# comments",
// "[cloud]" and "[loopback]" section headers, and one spec ID a line.
func ParseRequired(text string) (map[Mode][]string, error) {
	lists := map[Mode][]string{}
	var section Mode
	seen := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(text))
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = Mode(strings.Trim(line, "[]"))
			if section != ModeCloud && section != ModeLoopback {
				return nil, fmt.Errorf("line %d: unknown section [%s]", n, section)
			}
			if _, dup := lists[section]; dup {
				return nil, fmt.Errorf("line %d: section [%s] twice", n, section)
			}
			lists[section] = []string{}
		case section == "":
			return nil, fmt.Errorf("line %d: spec ID before any section", n)
		default:
			if strings.ContainsAny(line, " \t") {
				return nil, fmt.Errorf("line %d: %q is not one spec ID", n, line)
			}
			if seen[string(section)+" "+line] {
				return nil, fmt.Errorf("line %d: %s listed twice in [%s]", n, line, section)
			}
			seen[string(section)+" "+line] = true
			lists[section] = append(lists[section], line)
		}
	}
	for s := range lists {
		sort.Strings(lists[s])
	}
	return lists, sc.Err()
}

// FormatRequired writes a required-spec list in the form [ParseRequired]
// reads, under a header naming the kit version.
func FormatRequired(kitVersion string, lists map[Mode][]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Specs that an evidence bundle of sandboxkit kit %s must hold, each passed.\n", kitVersion)
	b.WriteString("# [cloud]: a run with --cloud against a real provider (needs no fault injection).\n")
	b.WriteString("# [loopback]: a run against the kit's fake provider.\n")
	b.WriteString("# Generated from the spec catalog; a change is a reviewed change:\n")
	b.WriteString("#   go test ./conformance -run TestRequiredSpecList -update\n")
	for _, mode := range Modes() {
		ids := append([]string(nil), lists[mode]...)
		sort.Strings(ids)
		fmt.Fprintf(&b, "\n[%s]\n", mode)
		for _, id := range ids {
			b.WriteString(id + "\n")
		}
	}
	return b.String()
}

func requiredLists(kitVersion string) (map[Mode][]string, error) {
	if kitVersion == "" || strings.ContainsAny(kitVersion, `/\`) {
		return nil, fmt.Errorf("evidence: no required-spec list for kit version %q", kitVersion)
	}
	data, err := requiredFS.ReadFile("required/" + kitVersion + ".txt")
	if err != nil {
		return nil, fmt.Errorf("evidence: no required-spec list for kit version %q (known: %s)", kitVersion, strings.Join(RequiredVersions(), ", "))
	}
	lists, err := ParseRequired(string(data))
	if err != nil {
		return nil, fmt.Errorf("evidence: required/%s.txt: %w", kitVersion, err)
	}
	return lists, nil
}
