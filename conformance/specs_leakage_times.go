package conformance

import (
	"context"
	"time"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
)

// metadataZones are the offsets a platform might answer in: a half-hour
// zone east of UTC and one west of it.
var metadataZones = []*time.Location{
	time.FixedZone("UTC+05:30", 5*3600+1800),
	time.FixedZone("UTC-08:00", -8*3600),
}

func leakageTimeSpecs() []Spec {
	return []Spec{
		{
			ID:    "leakage.metadata-times-in-utc",
			Rules: []string{"META-2"},
			Tools: []string{"get_sandbox", "list_sandboxes"},
			Title: "times the platform writes with a UTC offset (+05:30, -08:00) come back from get_sandbox and list_sandboxes " +
				"converted to UTC, the same instants",
			Body: specMetadataTimesInUTC,
		},
	}
}

func specMetadataTimesInUTC(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	c := newErrsChecker(tc)
	var ids []string
	for _, zone := range metadataZones {
		ids = append(ids, tc.Seed(fakeprovider.SandboxSeed{Zone: zone, EndAt: tc.Clock.Now().Add(time.Hour)}))
	}
	list := leakCall(ctx, tc, c, s, "list_sandboxes", "list_sandboxes", map[string]any{})
	for _, id := range ids {
		rec, _ := tc.Fake.Sandbox(id)
		for label, m := range map[string]map[string]any{
			"get_sandbox":    leakCall(ctx, tc, c, s, "get_sandbox", "get_sandbox", map[string]any{"sandbox_id": id}).Structured,
			"list_sandboxes": leakListed(list, id),
		} {
			if m == nil {
				c.addf("%s: no metadata for %s", label, id)
				continue
			}
			c.metadata(label, m, id)
			for key, want := range map[string]time.Time{"started_at": rec.StartedAt, "end_at": rec.EndAt} {
				v, _ := m[key].(string)
				got, err := time.Parse(time.RFC3339Nano, v)
				if err != nil {
					continue // c.metadata reported it
				}
				if d := got.Sub(want); d > time.Second || d < -time.Second {
					c.addf("%s: %s of %s is %s, but the platform said %s: not the same instant", label, key, id, v, want.UTC().Format(time.RFC3339))
				}
			}
		}
	}
	c.done()
}
