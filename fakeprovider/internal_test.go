package fakeprovider

import (
	"encoding/base64"
	"maps"
	"testing"
	"time"
)

func TestShortID(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"iabc123", "iabc123", true},
		{"iabc123-6532622b", "iabc123", true}, // legacy <sandboxID>-<clientID>
		{"iabc123-", "iabc123", true},
		{"a-b-c", "", false},
		{"", "", false},
		{"-x", "", false},
		{"IABC", "", false},
		{"i_abc", "", false},
		{"e2b:iabc", "", false},
		{"iabc/def", "", false},
	}
	for _, tt := range tests {
		got, err := shortID(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("shortID(%q) = %q, %v; want %q, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
	for range 100 {
		if id := newSandboxID(); len(id) != 21 || id[0] != 'i' || !sandboxIDPattern.MatchString(id) {
			t.Fatalf("newSandboxID() = %q", id)
		}
	}
}

func TestNextToken(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.FixedZone("X", 3600))
	s := &sandboxRecord{id: "iabc", startedAt: at}
	for _, asc := range []bool{false, true} {
		tok := encodeNextToken(s, asc)
		raw, err := base64.URLEncoding.DecodeString(tok)
		if err != nil {
			t.Fatal(err)
		}
		want := "2026-03-01T11:00:00.123456789Z__iabc"
		if asc {
			want += "__asc"
		}
		if string(raw) != want {
			t.Errorf("token = %q, want %q", raw, want)
		}
		c, err := decodeNextToken(tok)
		if err != nil || !c.startedAt.Equal(at) || c.id != "iabc" {
			t.Errorf("decode: %+v, %v", c, err)
		}
	}
	unpadded := base64.RawURLEncoding.EncodeToString([]byte("2026-03-01T11:00:00Z__iab"))
	if _, err := decodeNextToken(unpadded); err != nil {
		t.Errorf("unpadded token: %v", err)
	}
	for _, bad := range []string{"", "***", base64.URLEncoding.EncodeToString([]byte("a__b__c__d"))} {
		if _, err := decodeNextToken(bad); err == nil {
			t.Errorf("decodeNextToken(%q) succeeded", bad)
		}
	}
}

func TestParseMetadataFilter(t *testing.T) {
	tests := []struct {
		in   string
		want map[string]string
		ok   bool
	}{
		{"a=1", map[string]string{"a": "1"}, true},
		{"a=1&b=2", map[string]string{"a": "1", "b": "2"}, true},
		{"a%3D1%26b%3D2", map[string]string{"a": "1", "b": "2"}, true},
		{"k%2520x=v%2526w", map[string]string{"k x": "v&w"}, true},
		{"a=", map[string]string{"a": ""}, true},
		{"a", nil, false},
		{"a=1=2", nil, false},
		{"a=1&", nil, false},
		{"%zz=1", nil, false},
	}
	for _, tt := range tests {
		got, err := parseMetadataFilter(tt.in)
		if (err == nil) != tt.ok || (tt.ok && !maps.Equal(got, tt.want)) {
			t.Errorf("parseMetadataFilter(%q) = %v, %v; want %v, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestStateWire(t *testing.T) {
	for s, want := range map[State]string{
		StateRunning: "running", StatePaused: "paused", StatePausing: "paused",
		StateSnapshotting: "running", StateKilling: "running",
	} {
		if got := s.wire(); got != want {
			t.Errorf("%s.wire() = %q, want %q", s, got, want)
		}
	}
}
