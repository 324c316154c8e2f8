package main

import (
	"testing"

	"github.com/sandboxkit/sandboxkit/server"
)

func TestServeLivePerPrincipalDefault(t *testing.T) {
	for _, c := range []struct {
		flag       int
		principals bool
		want       int
	}{
		{-1, false, 0},
		{-1, true, server.DefaultSandboxesPerPrincipal},
		{0, true, 0},
		{5, false, 5},
	} {
		if got := serveLivePerPrincipal(c.flag, c.principals); got != c.want {
			t.Errorf("flag %d, principals %v: %d, want %d", c.flag, c.principals, got, c.want)
		}
	}
}
