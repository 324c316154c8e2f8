//go:build !unix

package main

import (
	"errors"
	"os"
)

// divertStdout cannot move the standard output here: the caller keeps
// Ginkgo's output on the console.
func divertStdout(*os.File) (*os.File, func() error, error) {
	return nil, nil, errors.ErrUnsupported
}
