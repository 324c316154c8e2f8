package server

import (
	"strings"
	"testing"
)

func TestParseTokens(t *testing.T) {
	lines := "# team tokens\nalice aaaaaaaaaaaaaaaaaaaa\n\nbob   bbbbbbbbbbbbbbbbbbbb\n"
	json := `{"alice": "aaaaaaaaaaaaaaaaaaaa", "bob": "bbbbbbbbbbbbbbbbbbbb"}`
	for name, in := range map[string]string{"lines": lines, "json": json} {
		got, err := ParseTokens([]byte(in))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(got) != 2 || got["aaaaaaaaaaaaaaaaaaaa"] != "alice" || got["bbbbbbbbbbbbbbbbbbbb"] != "bob" {
			t.Errorf("%s: %v", name, got)
		}
	}
	for name, in := range map[string]string{
		"empty":          "# nothing\n",
		"short token":    "alice short\n",
		"shared token":   "alice aaaaaaaaaaaaaaaaaaaa\nbob aaaaaaaaaaaaaaaaaaaa\n",
		"twice":          "alice aaaaaaaaaaaaaaaaaaaa\nalice bbbbbbbbbbbbbbbbbbbb\n",
		"bad principal":  "al/ice aaaaaaaaaaaaaaaaaaaa\n",
		"three fields":   "alice aaaaaaaaaaaaaaaaaaaa extra\n",
		"malformed json": `{"alice": 1}`,
	} {
		_, err := ParseTokens([]byte(in))
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if strings.Contains(err.Error(), "aaaaaaaaaaaaaaaaaaaa") {
			t.Errorf("%s: the error shows a token: %v", name, err)
		}
	}
}
