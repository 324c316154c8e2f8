//go:build !linux

package fakeenvd

import (
	"errors"
	"fmt"
)

// NewOS is Linux only; elsewhere it returns errors.ErrUnsupported.
func NewOS(Config) (*Daemon, error) {
	return nil, fmt.Errorf("fakeenvd: the OS backend: %w", errors.ErrUnsupported)
}
