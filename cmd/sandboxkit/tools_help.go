package main

import (
	"fmt"
	"strings"

	"github.com/sandboxkit/sandboxkit/internal/toolset"
)

// serveToolsParagraph opens serve --help: the contract's tools, named from
// its tool table (package toolset), wrapped at 78 columns.
func serveToolsParagraph() string {
	names := toolset.Names()
	text := fmt.Sprintf("serve runs sandboxkit's reference MCP server: the %d sandbox tools of the tool contract (%s) on E2B or an E2B-compatible provider.",
		len(names), strings.Join(names, ", "))
	return wrap(text, 78)
}

// wrap breaks text into lines of at most width columns at spaces.
func wrap(text string, width int) string {
	var b strings.Builder
	line := 0
	for i, word := range strings.Fields(text) {
		if i > 0 && line+1+len(word) > width {
			b.WriteByte('\n')
			line = 0
		} else if i > 0 {
			b.WriteByte(' ')
			line++
		}
		b.WriteString(word)
		line += len(word)
	}
	return b.String()
}
