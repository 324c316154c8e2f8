package fakeprovider

import (
	"fmt"
	"net/http"
	"strings"
)

// RouteTemplateAlias is the platform's alias lookup, which
// Template.exists / Template.aliasExists of both SDKs call (Python
// e2b/template_sync/build_api.py check_alias_exists). It is journalled
// under this string as its operation.
const RouteTemplateAlias = "GET /templates/aliases/{alias}"

// defaultTag is the tag a name without one means (infra
// packages/shared/pkg/id/id.go DefaultTag).
const defaultTag = "default"

// templateAliasJSON is the platform's TemplateAliasResponse.
type templateAliasJSON struct {
	Public     bool   `json:"public"`
	TemplateID string `json:"templateID"`
}

// handleTemplateAlias answers GET /templates/aliases/{alias} as infra's
// packages/api/internal/handlers/template_alias.go does: 404 "template '<x>'
// not found" for a name nobody has; 403 for a template of another team
// (ownership is checked before the tag, so a non-owner cannot probe tags);
// for one of the account's own, 404 for a tag it does not have, else 200
// {public, templateID}. The SDKs read 403 as "exists" and 404 as "does not".
func (p *Provider) handleTemplateAlias(w http.ResponseWriter, r *http.Request) {
	name, tag, hasTag := strings.Cut(strings.TrimSpace(r.PathValue("alias")), ":")
	if name == "" || hasTag && tag == "" {
		p.writeError(w, r, http.StatusBadRequest, "Invalid alias format: template ID cannot be empty")
		return
	}
	_, t, ok := p.lookupTemplate(name)
	switch {
	case !ok:
		p.writeError(w, r, http.StatusNotFound, fmt.Sprintf("template '%s' not found", name))
	case !t.Owned:
		p.writeError(w, r, http.StatusForbidden, "You don't have access to this template alias")
	case hasTag && !strings.EqualFold(tag, defaultTag):
		p.writeError(w, r, http.StatusNotFound, fmt.Sprintf("tag '%s' does not exist for template '%s'", tag, name))
	default:
		id := t.ID
		if id == "" {
			id = name
		}
		p.writeJSON(w, http.StatusOK, templateAliasJSON{Public: t.Public, TemplateID: id})
	}
}
