package conformance

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// suggestProfile says which --profile the server's advertised tools fit,
// when the run declared none and that is not the contract's: a lone
// run_code is the one-shot design; tools that require sandbox_id keep no
// session default, the explicit-ids design (for a server that serves 2025
// sessions: a modern request names its sandbox anyway). It returns ""
// otherwise.
func suggestProfile(cfg *Config, tools map[string]*mcp.Tool, sessions bool) string {
	if cfg.Profile != "" || cfg.RequireAll || cfg.Cloud {
		return ""
	}
	if len(tools) == 1 && tools["run_code"] != nil {
		return fmt.Sprintf("the server offers one tool, %s: it fits --profile %s (each call runs in a sandbox of its own); without it, the specs of every other tool are skipped and those of the session default fail",
			cfg.toolName("run_code"), ProfileOneShot)
	}
	var requiring []string
	for _, name := range ContractTools() {
		if t := tools[name]; t != nil && takesSandboxID(name) && requires(t, sandboxIDName(cfg, name)) {
			requiring = append(requiring, cfg.toolName(name))
		}
	}
	if len(requiring) == 0 || !sessions {
		return ""
	}
	return fmt.Sprintf("%s require %s: the server keeps no session default; it fits --profile %s (the kit then names the sandbox in every call)",
		strings.Join(requiring, ", "), sandboxIDName(cfg, "run_command"), ProfileExplicitIDs)
}

// sandboxIDName is the server's name for a tool's sandbox_id (a tool map
// may rename it).
func sandboxIDName(cfg *Config, tool string) string {
	if a, ok := cfg.adapter(tool).Args["sandbox_id"]; ok && a.Name != "" {
		return a.Name
	}
	return "sandbox_id"
}

// requires reports whether the tool's input schema lists arg as required.
func requires(t *mcp.Tool, arg string) bool {
	data, err := json.Marshal(t.InputSchema)
	if err != nil {
		return false
	}
	var schema struct {
		Required []string `json:"required"`
	}
	return json.Unmarshal(data, &schema) == nil && slices.Contains(schema.Required, arg)
}
