// Package conformance is the sandboxkit conformance kit: a Ginkgo suite that
// drives an MCP server implementing the sandbox tools against a fake
// provider and checks the rules of the tool contract (contract/tools.md,
// see [Rules]).
//
// Every call goes through [Session.CallRaw], which also reads each result
// as the official MCP clients do ([EveryResultRules]: TOOLS-5): a result
// they would refuse fails the spec that made the call. The same wrapper
// adapts servers of other designs ([Config.Tools], read from a tool map by
// [ParseToolMap]): arguments renamed and scaled on the way out, results
// read where the server puts them on the way back, so that specs stay in
// contract terms; a success without structuredContent is read from its
// text block and reported once for the run (TOOLS-3). [Config.Profile]
// declares the server's design: specs that do not apply to it are skipped
// as not applicable. [Config.ExpectedFailures] is a CI baseline, and
// [WriteOutcome] decides the run against it.
//
// In cloud mode ([Config.Cloud]) the kit runs the specs that need no fake
// against the real provider the environment names, adds cloud-only specs
// that cross-check the server against the platform through the kit's own
// SDK, tracks every sandbox the run creates in a state file and destroys
// them by ID at the end ([cloudstate.Sweep] cleans up after an interrupted run).
// [RunOptions.EvidenceDir] records any run as an evidence bundle (package
// evidence).
package conformance
