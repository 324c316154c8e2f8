package conformance_test

import (
	"testing"

	"github.com/sandboxkit/sandboxkit/conformance"
)

// A server's own test runs the whole kit against the server as a stdio
// command, with the kit's fake provider behind it (the README's snippet).
func ExampleRun() {
	_ = func(t *testing.T) {
		cfg := conformance.NewConfig()
		cfg.ServerCommand = []string{"./bin/my-server"}
		conformance.Run(t, cfg)
	}
}

// RunWith selects specs by label and writes Ginkgo's reports.
func ExampleRunWith() {
	_ = func(t *testing.T) {
		cfg := conformance.NewConfig()
		cfg.ServerCommand = []string{"./bin/my-server", "--stdio"}
		conformance.RunWith(t, cfg, &conformance.RunOptions{
			LabelFilter: "bounds || LIST-3",
			JUnitReport: "junit.xml",
		})
	}
}

// Describe embeds the kit in a Ginkgo suite of the server's own; the suite
// runs it with its usual RunSpecs. At the top level of a test file:
//
//	var _ = conformance.Describe(cfg)
func ExampleDescribe() {
	cfg := conformance.NewConfig()
	cfg.ServerCommand = []string{"./bin/my-server"}
	_ = func() bool { return conformance.Describe(cfg) }
}
