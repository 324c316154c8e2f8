package fakeprovider_test

import (
	"net/http"
	"testing"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
)

// TestTemplateAlias checks GET /templates/aliases/{alias} against infra's
// packages/api/internal/handlers/template_alias.go.
func TestTemplateAlias(t *testing.T) {
	tmpls := fakeprovider.DefaultTemplates()
	tmpls["my-env"] = fakeprovider.Template{ID: "mine123", Owned: true, CPUCount: 1, MemoryMB: 256, DiskSizeMB: 256}
	f := newFixture(t, &fakeprovider.Options{Templates: tmpls})
	// E2B's public templates belong to another team: 403, which the SDKs
	// read as "exists" (Python template_sync/build_api.py check_alias_exists).
	for _, alias := range []string{"base", "code-interpreter-v1", "base:v2", tmpls["base"].ID} {
		wantError(t, f.p, f.do("GET", "/templates/aliases/"+alias, nil), http.StatusForbidden, "You don't have access to this template alias")
	}
	wantError(t, f.p, f.do("GET", "/templates/aliases/nope", nil), http.StatusNotFound, "template 'nope' not found")
	wantError(t, f.p, f.do("GET", "/templates/aliases/my-env:v9", nil), http.StatusNotFound, "tag 'v9' does not exist for template 'my-env'")
	for _, alias := range []string{"my-env", "my-env:default"} {
		res := f.do("GET", "/templates/aliases/"+alias, nil)
		if res.status != http.StatusOK {
			t.Fatalf("%s: status %d %s", alias, res.status, res.body)
		}
		if got := decodeObject(t, res.body); got["templateID"] != "mine123" || got["public"] != false {
			t.Errorf("%s: body %v", alias, got)
		}
	}
	wantError(t, f.p, f.doWith("GET", "/templates/aliases/base", nil, nil), http.StatusUnauthorized, "")
	if n := f.p.Journal().Count(fakeprovider.RouteTemplateAlias); n != 9 {
		t.Errorf("journal counts %d alias lookups, want 9 (the 401 too)", n)
	}
}
