package main

import (
	"errors"
	"fmt"

	"github.com/sandboxkit/sandboxkit/conformance"
)

// exitCodeError ends the program with a given status and no extra message;
// the command has already said what went wrong.
type exitCodeError int

func (e exitCodeError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func asExitCode(err error, target *exitCodeError) bool { return errors.As(err, target) }

// Exit statuses of conform beyond 0 (every selected spec passed, nothing
// found). exitFailed is also any other error's status (main). An
// inconclusive run has its own status: nothing failed, so it is no 1, but
// specs could not be judged, so it is no 0 either; a CI job that accepts
// it says so (conform ... || [ $? -eq 2 ]).
const (
	exitFailed       exitCodeError = 1
	exitInconclusive exitCodeError = 2
)

// verdictExit is the error that ends conform with a verdict's status, or
// nil for a pass.
func verdictExit(v conformance.Verdict) error {
	switch v {
	case conformance.VerdictFail:
		return exitFailed
	case conformance.VerdictInconclusive:
		return exitInconclusive
	}
	return nil
}
