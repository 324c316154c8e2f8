package conformance

import (
	"context"
	"time"

	"github.com/onsi/gomega"
)

// emptyIDCalls are valid calls of every tool that takes sandbox_id, with
// sandbox_id explicitly empty: each must be rejected, also when the session
// has a default that "" could be mistaken for (VAL-3).
var emptyIDCalls = []struct {
	tool string
	args map[string]any
}{
	{"get_sandbox", map[string]any{}},
	{"kill_sandbox", map[string]any{}},
	{"set_sandbox_timeout", map[string]any{"timeout": 600}},
	{"run_command", map[string]any{"command": "echo val3"}},
	{"run_code", map[string]any{"code": "echo val3", "language": "bash"}},
	{"read_file", map[string]any{"path": "/home/user/val3.txt"}},
	{"write_file", map[string]any{"path": "/home/user/val3.txt", "content": "val3"}},
	{"list_files", map[string]any{"path": "/home/user"}},
	{"start_background_command", map[string]any{"command": "sleep 30"}},
	{"upload_file", map[string]any{"path": "/home/user/val3.bin", "data_base64": "dmFsMw=="}},
	{"download_file", map[string]any{"path": "/home/user/val3.bin"}},
}

func boundsWithDefaultSpecs() []Spec {
	return []Spec{
		{
			ID:    "bounds.empty-id-with-default",
			Rules: []string{"VAL-3", "VAL-6", "VAL-7"},
			Tools: []string{"create_sandbox", "get_sandbox"},
			Title: `with a default sandbox present, every tool given sandbox_id "" is an invalid_argument error naming sandbox_id, ` +
				"makes no platform request, and leaves the default as it was (alive, still the default, its end time unchanged)",
			Body: specEmptyIDWithDefault,
		},
	}
}

func specEmptyIDWithDefault(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	def := s.mustCreate(ctx, nil)
	before, _ := tc.Fake.Sandbox(def)
	tc.Clock.Advance(5 * time.Second) // a renewal by mistake would move endAt
	checked := 0
	for _, c := range emptyIDCalls {
		if tc.Advertised(c.tool) == nil {
			continue
		}
		checked++
		s.expectRejected(ctx, c.tool, []boundsCase{validArgs(c.args).valueCase("sandbox_id", "empty-with-default", "")})
	}
	gomega.Expect(checked).To(gomega.BeNumerically(">", 0), "no advertised tool takes sandbox_id")
	after, alive := tc.Fake.Sandbox(def)
	gomega.Expect(alive).To(gomega.BeTrue(), `a call with sandbox_id "" destroyed the default sandbox`)
	gomega.Expect(after.EndAt).To(gomega.BeTemporally("==", before.EndAt),
		`a call with sandbox_id "" changed the default sandbox's end time (it was taken for the default)`)
	s.expectUnchanged(ctx, 1, def)
}
