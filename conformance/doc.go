// Package conformance is the sandboxkit conformance kit: a Ginkgo suite that
// drives an MCP server implementing the sandbox tools against a fake
// provider and checks the rules of the tool contract (see [Rules]).
package conformance
