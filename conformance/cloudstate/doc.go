// Package cloudstate keeps the state file of a cloud conformance run and
// sweeps what an interrupted run left behind.
//
// A cloud run (conformance with Config.Cloud) records every sandbox it
// creates in <state dir>/<run ID>.json the moment it sees the ID, through a
// [Tracker]. [Sweep] destroys exactly the sandboxes of one run's state
// file that may still exist, by ID: it never lists the account. [ReadRun]
// and [ListRuns] read the state files back (`sandboxkit sweep --list`).
//
// The package depends on sandbox only; conformance and cmd/sandboxkit
// depend on it.
package cloudstate
