package fakeprovider_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
)

// A seed with a Zone answers get and list with that zone's offset, the same
// instants; without one, in UTC.
func TestAddSandbox_Zone(t *testing.T) {
	f := newFixture(t, nil)
	ist := time.FixedZone("IST", 5*3600+1800)
	zoned := f.p.AddSandbox(fakeprovider.SandboxSeed{Zone: ist})
	plain := f.p.AddSandbox(fakeprovider.SandboxSeed{})
	rec, _ := f.p.Sandbox(zoned)

	var got struct{ StartedAt, EndAt string }
	res := f.do("GET", "/sandboxes/"+zoned, nil)
	if err := json.Unmarshal(res.body, &got); err != nil || res.status != 200 {
		t.Fatalf("get: %d %s", res.status, res.body)
	}
	for name, v := range map[string]string{"startedAt": got.StartedAt, "endAt": got.EndAt} {
		if !strings.HasSuffix(v, "+05:30") {
			t.Errorf("%s %q: want the +05:30 offset", name, v)
		}
	}
	if at, _ := time.Parse(time.RFC3339Nano, got.StartedAt); !at.Equal(rec.StartedAt) {
		t.Errorf("startedAt %s is not the instant %s", got.StartedAt, rec.StartedAt)
	}

	var listed []struct{ SandboxID, StartedAt string }
	res = f.do("GET", "/v2/sandboxes", nil)
	if err := json.Unmarshal(res.body, &listed); err != nil {
		t.Fatalf("list: %v %s", err, res.body)
	}
	for _, l := range listed {
		want := "Z"
		if l.SandboxID == zoned {
			want = "+05:30"
		}
		if !strings.HasSuffix(l.StartedAt, want) {
			t.Errorf("listed %s startedAt %q, want suffix %q", l.SandboxID, l.StartedAt, want)
		}
	}
	if len(listed) != 2 || plain == "" {
		t.Fatalf("listed %d sandboxes, want 2", len(listed))
	}
}
