package main

import (
	"strings"
	"testing"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
)

// fake-provider --help says the fake is faithful by default and how to
// turn the canaries on; --routes names the families.
func TestFakeProviderHelp(t *testing.T) {
	out, err := run(t, "fake-provider", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--canaries", "By default it answers what the platform answers", "--routes", "/v2/sandboxes"} {
		if !strings.Contains(out, want) {
			t.Errorf("fake-provider --help lacks %q", want)
		}
	}
}

func TestRouteFamilyFlag(t *testing.T) {
	for in, want := range map[string]fakeprovider.RouteFamily{"all": fakeprovider.AllRoutes, "v1": fakeprovider.V1Routes, "v2": fakeprovider.V2Routes} {
		if got, err := routeFamily(in); err != nil || got != want {
			t.Errorf("routeFamily(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := run(t, "fake-provider", "--routes", "v3"); err == nil || !strings.Contains(err.Error(), "--routes") {
		t.Errorf("--routes v3: %v", err)
	}
}

// --e2b1 takes "debug" or "preload"; --help explains both.
func TestFakeProviderE2B1Flag(t *testing.T) {
	if _, err := run(t, "fake-provider", "--e2b1", "fetch"); err == nil || !strings.Contains(err.Error(), "--e2b1") {
		t.Errorf("--e2b1 fetch: %v", err)
	}
	out, err := run(t, "fake-provider", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--e2b1", "E2B_DEBUG=true", "NODE_OPTIONS"} {
		if !strings.Contains(out, want) {
			t.Errorf("fake-provider --help lacks %q", want)
		}
	}
}
