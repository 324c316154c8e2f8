// Package toolset is the contract's list of tools, generated from the tool
// table of conformance/contract/tools.md (section 1, TOOLS-1): the one
// place a tool is named by hand. The server registers exactly these tools
// with these annotations, the kit checks them, and compat/tools.json (for
// the JavaScript and Python checks) and the README's tool table are
// generated from the same table. After editing the table, run
//
//	go generate ./internal/toolset
//
// TestGeneratedFilesAreCurrent fails while a generated file is stale.
package toolset

//go:generate go run ./gen

// Tool is one tool of the contract and the annotations TOOLS-1 gives it.
type Tool struct {
	// Name is the tool's name in tools/list.
	Name string
	// Group is the contract's group of the tool (lifecycle, ...).
	Group string
	// Summary says what the tool does, in a line.
	Summary string
	// ReadOnly is the tool's readOnlyHint.
	ReadOnly bool
	// Destructive is the tool's destructiveHint.
	Destructive bool
	// Idempotent is the tool's idempotentHint.
	Idempotent bool
	// OpenWorld is the tool's openWorldHint.
	OpenWorld bool
}

// Names returns the names of All, in the contract's order.
func Names() []string {
	var names []string
	for _, t := range All() {
		names = append(names, t.Name)
	}
	return names
}

// Lookup returns the contract's tool of that name.
func Lookup(name string) (Tool, bool) {
	for _, t := range All() {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}
