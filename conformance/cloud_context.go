package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/onsi/ginkgo/v2"

	"github.com/sandboxkit/sandboxkit/conformance/cloudstate"
)

// dataPlaneTools create the session's default sandbox when called without
// sandbox_id and there is none (SESSION-2).
var dataPlaneTools = map[string]bool{
	"run_command": true, "run_code": true, "read_file": true, "write_file": true, "list_files": true,
	"start_background_command": true, "upload_file": true, "download_file": true,
}

// observe tracks, in cloud mode, every sandbox a call created, the moment
// its ID is seen: create_sandbox results, and the default sandbox a tool
// without sandbox_id reports or that a data-plane tool created implicitly
// (then the kit asks the session's get_sandbox for its ID). IDs the spec
// passed in or that list_sandboxes showed before the run created them are
// never tracked, so never destroyed.
func (s *Session) observe(ctx context.Context, tool string, args json.RawMessage, r *Result) {
	c := s.tc.run.cloud
	var a map[string]any
	_ = json.Unmarshal(args, &a)
	_, hasPassed := a["sandbox_id"]
	passed, _ := a["sandbox_id"].(string)
	if passed != "" {
		c.noteForeign(passed)
	}
	if tool == "list_sandboxes" && r.Structured != nil {
		items, _ := r.Structured["sandboxes"].([]any)
		for _, it := range items {
			if m, ok := it.(map[string]any); ok {
				id, _ := m["sandbox_id"].(string)
				c.noteForeign(id)
			}
		}
	}
	ok := r.Err == nil && !r.IsError && r.Structured != nil
	id := ""
	if ok {
		id = r.String("sandbox_id")
	}
	s.mu.Lock()
	switch {
	case tool == "create_sandbox":
		if ok && id != "" {
			s.tc.noteCreated(id, cloudstate.SourceCreate)
			s.defaultID = id
		}
	case tool == "kill_sandbox":
		if ok && (!hasPassed || passed == s.defaultID) {
			s.defaultID = ""
		}
	case ok && id != "" && !hasPassed && tool != "list_sandboxes":
		// Without sandbox_id a tool works on the session's default, which
		// only this session can have created.
		if id != s.defaultID {
			s.tc.noteCreated(id, cloudstate.SourceImplicit)
			s.defaultID = id
		}
	}
	probe := dataPlaneTools[tool] && !hasPassed && s.defaultID == ""
	s.mu.Unlock()
	if probe {
		s.probeDefault(ctx)
	}
}

// probeDefault asks the session for its default sandbox (get_sandbox with
// no arguments: it never creates nor renews, GET-2, GET-3) after a
// data-plane call that may have created one implicitly.
func (s *Session) probeDefault(ctx context.Context) {
	if s.tc.run.tools["get_sandbox"] == nil {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.tc.Config.CallTimeout)
	defer cancel()
	args := json.RawMessage(`{}`)
	res, err := s.conn.cs.CallTool(cctx, &mcp.CallToolParams{Name: s.tc.Config.toolName("get_sandbox"), Arguments: args})
	r := newResult("get_sandbox", res, err)
	s.tc.Config.adapter("get_sandbox").normalise(r) // the tool map's result reading, as in Session.call
	s.tc.mu.Lock()
	s.tc.transcript = append(s.tc.transcript, Exchange{Tool: "get_sandbox", Arguments: args, Result: r.JSON, Session: s.n, Probe: true})
	s.tc.mu.Unlock()
	if r.Err == nil && !r.IsError {
		if id := r.String("sandbox_id"); id != "" {
			s.tc.noteCreated(id, cloudstate.SourceImplicit)
			s.mu.Lock()
			s.defaultID = id
			s.mu.Unlock()
		}
	}
}

// noteCreated tracks a sandbox the spec created (durably, at once).
func (tc *TestContext) noteCreated(id, source string) {
	c := tc.run.cloud
	if c == nil {
		return
	}
	if !c.track(id, source, tc.specID) && !c.tracker.Has(id) {
		return // seen earlier as someone else's
	}
	tc.mu.Lock()
	defer tc.mu.Unlock()
	for _, cs := range tc.created {
		if cs.id == id {
			return
		}
	}
	tc.created = append(tc.created, createdSandbox{id: id, source: source})
}

// createdSandboxes returns what the spec created, oldest first.
func (tc *TestContext) createdSandboxes() []createdSandbox {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return append([]createdSandbox(nil), tc.created...)
}

// CreateExternal creates, in cloud mode, a sandbox through the kit's own
// SDK rather than the server: an external sandbox for the spec's sessions.
// The kit tracks it and destroys it when the spec ends.
func (tc *TestContext) CreateExternal(ctx context.Context, timeout time.Duration) string {
	ginkgo.GinkgoHelper()
	c := tc.run.cloud
	if c == nil {
		ginkgo.Fail("CreateExternal needs cloud mode; against the fake, use Seed")
	}
	id, err := c.createExternal(ctx, tc.specID, timeout)
	if err != nil {
		ginkgo.Fail(fmt.Sprintf("create an external sandbox through the kit's SDK: %v", err))
	}
	tc.mu.Lock()
	tc.created = append(tc.created, createdSandbox{id: id, source: cloudstate.SourceKit})
	tc.mu.Unlock()
	return id
}

// finishCloud ends a spec in cloud mode. It reads every sandbox the spec
// created while it may still live (so the tokens the platform issued for
// it join the secrets the run scans for and redacts), closes the sessions,
// waits for the server to destroy what its sessions created, and destroys
// whatever is left through the kit's SDK, by ID. It returns the sandboxes
// the server reported as created that the platform says started before
// the run: those are someone else's, and the kit leaves them alone.
func (tc *TestContext) finishCloud(ctx context.Context) (claimed []string) {
	c := tc.run.cloud
	ctx = context.WithoutCancel(ctx) // cleanup must run even when the spec was interrupted
	created := tc.createdSandboxes()
	for _, cs := range created {
		if !c.tracker.IsAlive(cs.id) {
			continue
		}
		if _, err := c.vetClaim(ctx, cs.id); errors.Is(err, errNotCreated) {
			claimed = append(claimed, cs.id)
		}
	}
	tc.closeSessions(ctx)
	deadline := time.Now().Add(tc.settleTime())
	for {
		pending := 0
		for _, cs := range created {
			if cs.source == cloudstate.SourceKit || !c.tracker.IsAlive(cs.id) {
				continue
			}
			if _, exists, err := c.info(ctx, cs.id); exists || err != nil {
				pending++
			}
		}
		if pending == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	var left, failed []string
	for _, cs := range created {
		if !c.tracker.IsAlive(cs.id) {
			continue
		}
		if err := c.destroy(ctx, cs.id); errors.Is(err, errNotCreated) {
			claimed = append(claimed, cs.id)
			continue
		} else if err != nil {
			failed = append(failed, cs.id)
			continue
		}
		if cs.source != cloudstate.SourceKit && c.tracker.State(cs.id) == cloudstate.SandboxDestroyed {
			left = append(left, cs.id)
		}
	}
	if len(left) > 0 {
		ginkgo.AddReportEntry("sandboxes the kit destroyed",
			fmt.Sprintf("%s outlived the spec's sessions by %s and were destroyed by the kit", strings.Join(left, ", "), tc.settleTime()))
	}
	if len(failed) > 0 {
		ginkgo.AddReportEntry("sandboxes not destroyed",
			fmt.Sprintf("%s could not be destroyed now; the kit retries at the end of the run", strings.Join(failed, ", ")))
	}
	return claimed
}
