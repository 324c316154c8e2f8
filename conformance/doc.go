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
//
// # Where things are
//
// Each family's specs are in specs_<family>.go (a large family spreads over
// specs_<family>_<part>.go): the file opens with the family's list, a
// ...Specs function of keyed Spec literals that spec.go registers, and each
// body below the list is a named function, spec<ID tail> (the body of
// exec.cwd-and-envs is specCwdAndEnvs; with the family's name where two
// would clash: specBoundsCreateSandbox). The run is in run.go ([RunWith]),
// suite.go (the run's state and its Ginkgo tree), context.go (what a spec
// gets) and target_*.go (how the server is reached). When the run is over,
// record.go says what it was and package internal/record builds and writes
// its evidence bundle; package internal/summary reads the report for the
// console ([WriteSummary], [Coverage]). The kit's own tests reach a run
// through runKit's test seams (seams.go), never through [Config].
package conformance
