package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Profile names the design a server follows. The contract describes one
// design (sessions with a default sandbox); servers of other designs
// declare theirs, and the specs of rules that do not apply to it are
// skipped as not applicable, with the reason, instead of failing.
// Certification ([Config.RequireAll]) is always the full contract.
type Profile string

// The profiles.
const (
	// ProfileContract is the contract's design: sessions own sandboxes and
	// keep a default one (the default profile).
	ProfileContract Profile = "contract"
	// ProfileExplicitIDs is a server with no session default: every call
	// names its sandbox. The kit's session wrapper names it for the specs:
	// a call without sandbox_id gets the sandbox the session last created
	// (creating one with create_sandbox first when there is none).
	ProfileExplicitIDs Profile = "explicit-ids"
	// ProfileOneShot is a server with a single run_code-like tool that
	// runs each call in a sandbox of its own.
	ProfileOneShot Profile = "one-shot"
)

// Profiles lists every profile.
func Profiles() []Profile { return []Profile{ProfileContract, ProfileExplicitIDs, ProfileOneShot} }

func (p Profile) validate() error {
	if p == "" || slices.Contains(Profiles(), p) {
		return nil
	}
	names := make([]string, 0, 3)
	for _, q := range Profiles() {
		names = append(names, string(q))
	}
	return fmt.Errorf("profile %q: want one of %s", p, strings.Join(names, ", "))
}

// NotApplicablePrefix starts the skip message of a spec whose rules do not
// apply to the declared profile.
const NotApplicablePrefix = "not applicable"

// defaultRules are the rules about the session's default sandbox.
var defaultRules = []string{"SESSION-2", "SESSION-3", "CREATE-5", "GET-2", "TIMEOUT-2", "LIST-2"}

// notApplicable returns why a spec does not apply to the declared profile,
// or "" when it does (always "" with RequireAll).
func (c *Config) notApplicable(spec Spec) string {
	if c.RequireAll {
		return ""
	}
	why := ""
	switch c.Profile {
	case ProfileExplicitIDs, ProfileOneShot:
		switch {
		case spec.Family == FamilyDefault:
			why = "it checks the session's default sandbox, and the server keeps none"
		case spec.ID == "bounds.empty-id-with-default":
			why = "it needs a session default sandbox, and the server keeps none"
		case len(spec.Rules) > 0 && profileSubset(spec.Rules, defaultRules):
			why = "its rules (" + strings.Join(spec.Rules, ", ") + ") are about the session's default sandbox, and the server keeps none"
		}
		if why != "" || c.Profile != ProfileOneShot {
			break
		}
		switch {
		case spec.ID == "protocol.tools-list-shape":
			why = "TOOLS-1 lists the contract's 15 tools; a one-shot server offers one"
		case len(spec.Tools) > 0 && !profileSubset(spec.Tools, []string{"run_code"}):
			why = "it needs tools besides run_code (" + strings.Join(spec.Tools, ", ") + ")"
		}
	}
	if why == "" {
		return ""
	}
	return fmt.Sprintf("%s under profile %s: %s", NotApplicablePrefix, c.Profile, why)
}

func profileSubset(xs, of []string) bool {
	for _, x := range xs {
		if !slices.Contains(of, x) {
			return false
		}
	}
	return true
}

// sandboxTools are the contract tools that take sandbox_id.
func takesSandboxID(tool string) bool {
	switch tool {
	case "create_sandbox", "list_sandboxes", "get_background_command", "kill_background_command":
		// The background-command tools name their command_id, not a
		// sandbox.
		return false
	}
	return isContractTool(tool)
}

// explicitID names the sandbox of a call without sandbox_id, for a server
// of profile explicit-ids: the sandbox the session last created, or a new
// one (the kit's probe, in the transcript). It returns the arguments to
// send.
func (s *Session) explicitID(ctx context.Context, tool string, args json.RawMessage) json.RawMessage {
	if !s.tc.namesSandboxes() || !takesSandboxID(tool) {
		return args
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil || m == nil {
		return args
	}
	if named, ok := m["sandbox_id"]; ok {
		s.forgetKilled(tool, named)
		return args
	}
	s.mu.Lock()
	id := s.kitDefault
	s.mu.Unlock()
	if id == "" {
		r := s.call(ctx, "create_sandbox", json.RawMessage(`{}`), true)
		if id = r.String("sandbox_id"); id == "" {
			return args
		}
		s.setKitDefault(id)
		s.mu.Lock()
		s.kitProbed++
		s.mu.Unlock()
	}
	if tool == "kill_sandbox" {
		s.setKitDefault("")
	}
	m["sandbox_id"], _ = json.Marshal(id)
	data, err := json.Marshal(m)
	if err != nil {
		return args
	}
	return data
}

// forgetKilled clears the kit's default when kill_sandbox names it: the
// next call without sandbox_id then gets a new sandbox, as a contract
// server creates a new default once its default was killed, instead of
// the killed one (a not_found that is the kit's, not the server's).
func (s *Session) forgetKilled(tool string, named json.RawMessage) {
	var id string
	if tool != "kill_sandbox" || json.Unmarshal(named, &id) != nil || id == "" {
		return
	}
	s.mu.Lock()
	if s.kitDefault == id {
		s.kitDefault = ""
	}
	s.mu.Unlock()
}

// setKitDefault records the sandbox a session of an explicit-ids server
// last created.
func (s *Session) setKitDefault(id string) {
	s.mu.Lock()
	s.kitDefault = id
	s.mu.Unlock()
}

// kitSandbox makes sure, for a server of profile explicit-ids, that the
// kit has a sandbox to name in calls of tool without sandbox_id, so that
// the probe that creates it is not one of the calls a spec counts the
// platform requests of. It returns how many sandboxes the kit's probes
// have created in the session.
func (s *Session) kitSandbox(ctx context.Context, tool string) int {
	s.explicitID(ctx, tool, json.RawMessage(`{}`))
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.kitProbed
}
