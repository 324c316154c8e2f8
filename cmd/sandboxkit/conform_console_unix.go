//go:build unix

package main

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// divertStdout points file descriptor 1, where Ginkgo's console reporter
// writes, at file, and returns the console (the old descriptor 1) and a
// function that puts it back. Ginkgo's reporter writes to the process's
// standard output, fixed when it starts, so only the descriptor can move.
func divertStdout(file *os.File) (*os.File, func() error, error) {
	saved, err := unix.Dup(1)
	if err != nil {
		return nil, nil, fmt.Errorf("details file: %w", err)
	}
	console := os.NewFile(uintptr(saved), "console")
	if err := unix.Dup2(int(file.Fd()), 1); err != nil {
		_ = console.Close()
		return nil, nil, fmt.Errorf("details file: %w", err)
	}
	restore := func() error {
		if err := unix.Dup2(saved, 1); err != nil {
			return fmt.Errorf("console: %w", err)
		}
		return console.Close()
	}
	return console, restore, nil
}
