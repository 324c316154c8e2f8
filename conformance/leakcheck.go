package conformance

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"

	"github.com/sandboxkit/sandboxkit/conformance/cloudstate"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// The leak check (SESSION-1) needs no tool names: in fake mode, after the
// spec's sessions are closed and the settle time has passed, every
// sandbox still running that the spec did not plant itself was left
// behind by the server. It runs for every spec, whatever tools the server
// offers, and fails the spec once, with each survivor's ID and the tool
// call during which it appeared.

// causeEntry is the name of the report entry that states a failure's first
// cause, so that the summary groups the failures that share it (see
// [WriteSummary]); its value is a one-line cause.
const causeEntry = "sandboxkit cause"

// causeLeak is the cause of every leak-check failure.
const causeLeak = "SESSION-1: the server leaves sandboxes running after its sessions close"

// liveIDs returns the IDs of the sandboxes live at the spec's fake now.
func (tc *TestContext) liveIDs() map[string]bool {
	ids := map[string]bool{}
	for _, rec := range tc.Fake.LiveSandboxes() {
		if rec.StartedForDebug {
			continue // the fake's, for e2b 1.x debug mode: no server created it
		}
		ids[rec.ID] = true
	}
	return ids
}

// noteAppeared attributes the sandboxes that appeared at the fake during a
// tool call to that call (fake mode): before is the live set when the call
// began. A sandbox that two overlapping calls could have created keeps the
// first.
func (tc *TestContext) noteAppeared(before map[string]bool, tool string, session, call int) {
	after := tc.liveIDs()
	tc.mu.Lock()
	defer tc.mu.Unlock()
	for id := range after {
		if before[id] {
			continue
		}
		if tc.fakeCreated == nil {
			tc.fakeCreated = map[string]string{}
		}
		if _, ok := tc.fakeCreated[id]; !ok {
			tc.fakeCreated[id] = fmt.Sprintf("%s, call %d of session %d", tc.Config.toolName(tool), call, session)
		}
	}
}

// Survives declares that sandbox id is meant to outlive the spec's
// sessions, with the reason (for example, every destroy of it was refused
// with 401): the leak check leaves it out. It is how a spec accounts for
// the survivors it causes deliberately; the check itself is never turned
// off.
func (tc *TestContext) Survives(id, reason string) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if tc.survivors == nil {
		tc.survivors = map[string]string{}
	}
	tc.survivors[id] = reason
}

// leftBehind returns the sandboxes live at the fake now that the spec
// neither planted (Seed) nor declared a survivor, sorted.
func (tc *TestContext) leftBehind() []string {
	tc.mu.Lock()
	survivors := tc.survivors
	tc.mu.Unlock()
	var ids []string
	for _, rec := range tc.Fake.LiveSandboxes() {
		if rec.Metadata[seedMarker] == "1" || rec.StartedForDebug {
			continue
		}
		if _, ok := survivors[rec.ID]; ok {
			continue
		}
		ids = append(ids, rec.ID)
	}
	sort.Strings(ids)
	return ids
}

// checkLeaks fails the spec when sandboxes it did not plant still run
// after every session closed and grace passed (SESSION-1). Only in fake
// mode: cloud mode tracks and destroys what each spec created instead.
func (tc *TestContext) checkLeaks(grace time.Duration) {
	left := tc.leftBehind()
	if len(left) == 0 {
		return
	}
	// Created counts the successful creates in the journal, or, when the
	// spec reset the journal, the sandboxes seen to appear during its calls
	// and those still running, whichever is more.
	created := 0
	for _, e := range tc.Fake.Journal().Entries() {
		if (e.Op == sandbox.OpCreateSandbox || e.Op == sandbox.RouteCreateSandboxV2) && e.Status == http.StatusCreated {
			created++
		}
	}
	tc.mu.Lock()
	appeared := map[string]bool{}
	for id := range tc.fakeCreated {
		appeared[id] = true
	}
	var each []string
	for _, id := range left {
		appeared[id] = true
		from := tc.fakeCreated[id]
		if from == "" {
			from = "outside any tool call of the spec"
		}
		each = append(each, fmt.Sprintf("%s (appeared during %s)", id, from))
	}
	tc.mu.Unlock()
	created = max(created, len(appeared))
	ginkgo.Fail(fmt.Sprintf("%s: the spec's sessions created %s; %d destroyed, %d still running %v after every session closed: %s. "+
		"A session's sandboxes must be destroyed when it closes (stdin EOF for a stdio server)",
		leakPrefix, plural(created, "sandbox", "sandboxes"), created-len(left), len(left), grace, strings.Join(each, "; ")))
}

// plural writes n with the word's singular or plural form.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// The lease check replaces the session leak check where there are no
// sessions (section 13): in a modern run, and for a server of a sessionless
// profile (explicit-ids, one-shot). A sandbox outliving its connection is
// then the design (LEASE-3); what must hold is that its lease ends it:
// advancing the fake clock by the longest policy the spec could have given
// plus the skew, past the spec's last call, leaves nothing alive that the
// spec created (LEASE-1, LEASE-2).

// causeLeaseLeak is the cause of every lease-check failure.
const causeLeaseLeak = "LEASE-2: the server keeps sandboxes alive past their lease"

// leaseLeakPrefix begins every lease-check failure message.
const leaseLeakPrefix = "LEASE-2: sandboxes alive past their lease"

// leaseSkew is how far past now + policy a lease's end may lie: the clock
// skew the cloud specs allow between server and provider.
const leaseSkew = cloudstate.ClockSkew

// defaultLeasePolicy is the lease of a sandbox created without a timeout
// (LEASE-1: 300 s, stated in create_sandbox's description).
const defaultLeasePolicy = 300 * time.Second

// longestPolicy is the longest lease policy the spec's calls could have
// set: the default, or the largest timeout a create_sandbox or
// set_sandbox_timeout of the spec named.
func (tc *TestContext) longestPolicy() time.Duration {
	longest := defaultLeasePolicy
	for _, ex := range tc.Transcript() {
		if ex.Tool != "create_sandbox" && ex.Tool != "set_sandbox_timeout" {
			continue
		}
		var args struct {
			Timeout *float64 `json:"timeout"`
		}
		if json.Unmarshal(ex.Arguments, &args) == nil && args.Timeout != nil && *args.Timeout > 0 {
			longest = max(longest, time.Duration(*args.Timeout*float64(time.Second)))
		}
	}
	return longest
}

// checkLeaseEnds fails the spec when a sandbox it created outlives the
// longest lease it could have: the fake's clock moves past every end the
// server may rightly have set (LEASE-1, LEASE-2). Fake mode only.
func (tc *TestContext) checkLeaseEnds() {
	policy := tc.longestPolicy()
	tc.mu.Lock()
	if d := tc.latestMovedEnd.Sub(tc.Clock.Now()); d > policy {
		policy = d
	}
	tc.mu.Unlock()
	tc.Clock.Advance(policy + leaseSkew)
	left := tc.leftBehind()
	if len(left) == 0 {
		return
	}
	tc.mu.Lock()
	var each []string
	for _, id := range left {
		from := tc.fakeCreated[id]
		if from == "" {
			from = "outside any tool call of the spec"
		}
		end := ""
		if rec, ok := tc.Fake.Sandbox(id); ok {
			end = ", end " + rec.EndAt.UTC().Format(time.RFC3339)
		}
		each = append(each, fmt.Sprintf("%s (appeared during %s%s)", id, from, end))
	}
	tc.mu.Unlock()
	ginkgo.AddReportEntry(causeEntry, causeLeaseLeak, ginkgo.ReportEntryVisibilityNever)
	ginkgo.Fail(fmt.Sprintf("%s: %d still alive at the fake %s after the spec's last call (the longest policy it set, %s, plus %s of skew): %s. "+
		"A leased sandbox's end is at most now + policy after every call, and nothing renews it in the background",
		leaseLeakPrefix, len(left), policy+leaseSkew, policy, leaseSkew, strings.Join(each, "; ")))
}

// movedEnd records an end the spec itself gave a sandbox at the fake,
// behind the server's back: the lease check waits for it too.
func (tc *TestContext) movedEnd(end time.Time) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if end.After(tc.latestMovedEnd) {
		tc.latestMovedEnd = end
	}
}
