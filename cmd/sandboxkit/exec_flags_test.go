package main

import (
	"context"
	"strings"
	"testing"
)

// TestExecFlags checks that --exec chooses memory by default, refuses an
// unknown mode and refuses --rootfs without namespace: the mode is only
// ever chosen explicitly.
func TestExecFlags(t *testing.T) {
	cases := []struct {
		mode, rootFS, wantErr string
	}{
		{"memory", "/", ""},
		{"", "/", ""},
		{"bogus", "/", `--exec must be "memory" or "namespace", got "bogus"`},
		{"memory", "/srv/rootfs", "--rootfs needs --exec namespace"},
	}
	for _, c := range cases {
		e := execFlags{mode: c.mode, rootFS: c.rootFS}
		nd, err := e.newDaemon(context.Background())
		switch {
		case c.wantErr == "" && (err != nil || nd != nil):
			t.Errorf("%+v: daemon %v err %v, want the in-memory default", c, nd != nil, err)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%+v: err %v, want %q", c, err, c.wantErr)
		}
	}
}
