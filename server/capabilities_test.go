package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// What the server serves it declares, the same in both eras: the SDK
// answers prompts/list, resources/list and resources/templates/list for
// every server, so server/discover and initialize declare prompts and
// resources beside tools (MCP 2026-07-28 server/prompts.mdx: "Servers that
// support prompts MUST declare the prompts capability in their
// DiscoverResult"), none with listChanged or subscribe (nothing changes).
func TestCapabilitiesMatchMethods(t *testing.T) {
	h := newHarness(t, nil)
	ts := serveHTTP(t, h, nil)
	lists := map[string]string{"prompts/list": "prompts", "resources/list": "resources", "resources/templates/list": "resourceTemplates"}

	t.Run("modern", func(t *testing.T) {
		_, data := postModern(t, ts.URL, ModernProtocolVersion, modernBody("server/discover", ModernProtocolVersion))
		var discover struct {
			Result struct {
				Capabilities map[string]any `json:"capabilities"`
			} `json:"result"`
		}
		if err := json.Unmarshal(sseData(data), &discover); err != nil {
			t.Fatalf("server/discover: %v: %s", err, data)
		}
		checkDeclared(t, "server/discover", discover.Result.Capabilities)
		for method, member := range lists {
			resp, data := postModern(t, ts.URL, ModernProtocolVersion, modernBody(method, ModernProtocolVersion))
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(data), `"`+member+`":[]`) {
				t.Errorf("modern %s: %d %s, want 200 with an empty %s", method, resp.StatusCode, data, member)
			}
		}
	})

	t.Run("legacy", func(t *testing.T) {
		c := h.connect()
		defer c.close()
		caps, err := json.Marshal(c.cs.InitializeResult().Capabilities)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		_ = json.Unmarshal(caps, &m)
		checkDeclared(t, "initialize", m)
		ctx := context.Background()
		if res, err := c.cs.ListPrompts(ctx, nil); err != nil || len(res.Prompts) != 0 {
			t.Errorf("prompts/list: %v, %v, want an empty list", res, err)
		}
		if res, err := c.cs.ListResources(ctx, nil); err != nil || len(res.Resources) != 0 {
			t.Errorf("resources/list: %v, %v, want an empty list", res, err)
		}
		if res, err := c.cs.ListResourceTemplates(ctx, nil); err != nil || len(res.ResourceTemplates) != 0 {
			t.Errorf("resources/templates/list: %v, %v, want an empty list", res, err)
		}
	})
}

// checkDeclared fails unless caps declares exactly tools, prompts and
// resources, each without listChanged or subscribe.
func checkDeclared(t *testing.T, what string, caps map[string]any) {
	t.Helper()
	want := `{"prompts":{},"resources":{},"tools":{}}`
	if got, _ := json.Marshal(caps); string(got) != want {
		t.Errorf("%s declares %s, want %s", what, got, want)
	}
}

// sseData is the data of a one-event SSE body, or the body itself.
func sseData(body []byte) []byte {
	for _, line := range strings.Split(string(body), "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			return []byte(d)
		}
	}
	return body
}
