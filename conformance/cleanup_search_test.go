package conformance

import (
	"net/url"
	"testing"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
)

// TestSearchesForNoneOf: cleanup.close-destroys-owned passes over a list
// filtered by metadata that none of its sandboxes carries (another spec's
// search, on a server the run shares), and still counts a plain list, a
// search for one of its sandboxes, and any request naming a sandbox.
func TestSearchesForNoneOf(t *testing.T) {
	records := []fakeprovider.SandboxRecord{{ID: "ia", Metadata: map[string]string{"sandboxkit_create": "mine"}}}
	list := func(q string) fakeprovider.Entry {
		v, _ := url.ParseQuery(q)
		return fakeprovider.Entry{Query: v}
	}
	cases := []struct {
		e    fakeprovider.Entry
		want bool
	}{
		{list("metadata=" + url.QueryEscape("sandboxkit_create=other")), true},
		{list("metadata=" + url.QueryEscape("sandboxkit_create=mine")), false},
		{list(""), false},
		{fakeprovider.Entry{SandboxID: "ib"}, false},
	}
	for _, c := range cases {
		if got := searchesForNoneOf(c.e, records); got != c.want {
			t.Errorf("searchesForNoneOf(%v, %s) = %v, want %v", c.e.Query, c.e.SandboxID, got, c.want)
		}
	}
}
