//go:build !linux

package nsexec

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/sandboxkit/sandboxkit/internal/fakeenvd"
)

// Sandbox is Linux only.
type Sandbox struct{}

// Start is Linux only; elsewhere it returns errors.ErrUnsupported.
func Start(Options, fakeenvd.Config) (*Sandbox, error) {
	return nil, fmt.Errorf("nsexec: namespace sandboxes need Linux: %w", errors.ErrUnsupported)
}

// ServeHTTP answers 502: there is no sandbox.
func (s *Sandbox) ServeHTTP(w http.ResponseWriter, _ *http.Request) { fakeenvd.WriteGone(w, "") }

// Close does nothing.
func (s *Sandbox) Close() {}

// Main does nothing off Linux.
func Main() {}

// Probe is Linux only; elsewhere it returns errors.ErrUnsupported.
func Probe(context.Context, Options) error {
	return fmt.Errorf("nsexec: namespace sandboxes need Linux: %w", errors.ErrUnsupported)
}
