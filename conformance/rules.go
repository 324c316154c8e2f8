package conformance

import (
	"bufio"
	_ "embed"
	"fmt"
	"regexp"
	"strings"
)

// contract is the tool contract the kit checks: contract/tools.md, the
// project's canonical contract, edited in this repository.
//
//go:embed contract/tools.md
var contract string

// Rule is one numbered rule of the tool contract.
type Rule struct {
	// ID is the rule's stable identifier, e.g. "LIST-3".
	ID string
	// Section is the contract section heading the rule sits under.
	Section string
	// Text is the rule's text, joined onto one line.
	Text string
}

var (
	ruleLine    = regexp.MustCompile(`^- ([A-Z]+-[0-9]+): (.*)$`)
	sectionLine = regexp.MustCompile(`^## (.*)$`)
)

// Rules returns every rule of the contract, in the contract's order.
func Rules() []Rule {
	rules, err := parseRules(contract)
	if err != nil {
		panic(err) // the embedded contract is checked by the tests
	}
	return rules
}

// EveryResultRules returns the contract rules the kit checks on every
// result of every spec, in the session wrapper all calls go through
// ([Session.CallRaw]), rather than in specs of their own. Every spec
// carries them as labels.
func EveryResultRules() []string { return []string{"TOOLS-5"} }

// Contract returns the text of the contract the kit checks.
func Contract() string { return contract }

// parseRules reads "- ID-N: text" items (continued by indented lines)
// under "## section" headings.
func parseRules(text string) ([]Rule, error) {
	var rules []Rule
	section := ""
	seen := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if m := sectionLine.FindStringSubmatch(line); m != nil {
			section = m[1]
			continue
		}
		if m := ruleLine.FindStringSubmatch(line); m != nil {
			if seen[m[1]] {
				return nil, fmt.Errorf("conformance: duplicate rule %s", m[1])
			}
			seen[m[1]] = true
			rules = append(rules, Rule{ID: m[1], Section: section, Text: m[2]})
			continue
		}
		if n := len(rules); n > 0 && strings.HasPrefix(line, "  ") && strings.TrimSpace(line) != "" {
			rules[n-1].Text += " " + strings.TrimSpace(line)
		}
	}
	return rules, sc.Err()
}
