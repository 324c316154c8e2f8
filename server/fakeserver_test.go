package server_test

import (
	"io"
	"log/slog"
	"testing"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
	"github.com/sandboxkit/sandboxkit/server"
)

// newFakeBacked returns a reference server whose platform reaches a fresh
// in-process fake provider (room for many sandboxes), and that fake.
func newFakeBacked(tb testing.TB) (*server.Server, *sandbox.Platform, *fakeprovider.Provider) {
	tb.Helper()
	fake := fakeprovider.New(&fakeprovider.Options{SandboxLimit: 5000})
	tb.Cleanup(fake.Close)
	p, err := fake.Platform()
	if err != nil {
		tb.Fatal(err)
	}
	srv, err := server.New(&server.Deps{Platform: p, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return srv, p, fake
}
