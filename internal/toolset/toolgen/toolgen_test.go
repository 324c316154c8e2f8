package toolgen

import (
	"strings"
	"testing"
)

const header = tableHeader + "\n|---|---|---|---|---|---|---|\n"

func contract(rows string) string {
	return "# The contract\n\n## 1. Tools\n\n" + header + rows + "\n- TOOLS-1: ...\n\n## 2. More\n"
}

func TestParse(t *testing.T) {
	tools, err := Parse(contract("| `get_thing` | things | read a thing | yes | no | yes | yes |\n| `drop_thing` | things | drop it | no | yes | yes | no |\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Tool{
		{Name: "get_thing", Group: "things", Summary: "read a thing", ReadOnly: true, Idempotent: true, OpenWorld: true},
		{Name: "drop_thing", Group: "things", Summary: "drop it", Destructive: true, Idempotent: true},
	}
	if len(tools) != 2 || tools[0] != want[0] || tools[1] != want[1] {
		t.Errorf("Parse = %+v, want %+v", tools, want)
	}
}

func TestParseRefusesMalformedTables(t *testing.T) {
	for _, c := range []struct{ name, text, want string }{
		{"no table", "# c\n\n## 1. Tools\n\nnone\n", "no tool table"},
		{"not in section 1", "# c\n\n## 1. A\n\n## 2. B\n\n" + header + "| `a` | g | s | no | no | no | no |\n", "first section"},
		{"no rows", contract(""), "no rows"},
		{"bad name", contract("| Thing | g | s | no | no | no | no |\n"), "snake_case"},
		{"bad cell", contract("| `a` | g | s | maybe | no | no | no |\n"), "want yes or no"},
		{"cells", contract("| `a` | g | s | no | no | no |\n"), "want 7 cells"},
		{"twice", contract("| `a` | g | s | no | no | no | no |\n| `a` | g | s | no | no | no | no |\n"), "listed twice"},
		{"both", contract("| `a` | g | s | yes | yes | no | no |\n"), "read-only and destructive"},
	} {
		if _, err := Parse(c.text); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want one saying %q", c.name, err, c.want)
		}
	}
}

func TestSpliceREADME(t *testing.T) {
	tools := []Tool{{Name: "get_thing", Summary: "read a thing", ReadOnly: true}}
	got, err := SpliceREADME("intro\n"+READMEBegin+"\nold table\n"+READMEEnd+"\nrest\n", tools)
	if err != nil {
		t.Fatal(err)
	}
	want := "intro\n" + READMEBegin + "\n| tool | what it does | annotations |\n|---|---|---|\n| `get_thing` | read a thing | read-only |\n" + READMEEnd + "\nrest\n"
	if got != want {
		t.Errorf("SpliceREADME =\n%s\nwant\n%s", got, want)
	}
	if _, err := SpliceREADME("no markers", tools); err == nil {
		t.Error("a README without markers must be refused")
	}
}

func TestIdent(t *testing.T) {
	if got := Ident("start_background_command"); got != "StartBackgroundCommand" {
		t.Errorf("Ident = %q", got)
	}
}
