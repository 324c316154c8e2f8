package main

import (
	"errors"
	"fmt"
)

// exitCodeError ends the program with a given status and no extra message;
// the command has already said what went wrong.
type exitCodeError int

func (e exitCodeError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func asExitCode(err error, target *exitCodeError) bool { return errors.As(err, target) }
