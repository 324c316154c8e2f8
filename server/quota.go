package server

import (
	"context"
	"fmt"

	"github.com/sandboxkit/sandboxkit/sandbox"
)

// checkLive refuses a create of principal that would take its live
// sandboxes beyond Limits.SandboxesPerPrincipal, with the answer of the
// per-session cap (QUOTA-1: rate_limited, too_many_sandboxes, nothing
// created). The caller has already counted this create among the
// principal's creates in flight, so of two concurrent creates the later
// count sees both: on one server the cap is never passed. A create that has
// just finished may be counted twice for a moment (listed, or owned, and
// still in flight), which can only refuse early. Leased sandboxes made on
// another replica at the same instant are not seen (docs/deploy.md).
func checkLive(ctx context.Context, d *Deps, r *registry, principal string, opts *sandbox.CreateOptions) error {
	limit := d.Limits.SandboxesPerPrincipal
	if limit <= 0 {
		return nil // no cap, and no platform list
	}
	// The order matters: a create of this principal that is in flight when
	// inFlight reads is counted there; one that ended before had already
	// adopted its sandbox (read next by ownedBy) or made it at the platform
	// (listed last). Reading them the other way round can miss one.
	others := r.inFlight(principal) - 1 // this create is not live yet
	owned := r.ownedBy(principal)
	leased, err := countLeased(ctx, d, principal, opts, limit)
	if err != nil {
		return fmt.Errorf("count the live sandboxes of a principal: %w", err)
	}
	if live := others + owned + leased; live >= limit { // QUOTA-4: every session and request of the principal counted together
		return &ToolError{Category: sandbox.RateLimited, Code: codeTooManySandboxes,
			Recovery: "this caller has " + itoa(limit) + " live sandboxes, its limit: kill one with kill_sandbox first"}
	}
	return nil
}

// countLeased counts, up to limit, the running and paused sandboxes that
// 2026-07-28 requests of principal created, on any replica: the list that
// list_sandboxes makes for that principal (HANDLE-1's filter), at the
// create's provider and region, one page of 100 per request.
func countLeased(ctx context.Context, d *Deps, principal string, opts *sandbox.CreateOptions, limit int) (int, error) {
	n := 0
	for offset := 0; n < limit; offset += maxListLimit {
		page, err := d.Platform.List(ctx, &sandbox.ListOptions{Provider: opts.Provider, Region: opts.Region,
			Metadata: map[string]string{PrincipalTagKey: principal}, Limit: maxListLimit, Offset: offset})
		if err != nil {
			return 0, err
		}
		n += len(page) // only leased sandboxes carry PrincipalTagKey: a session's owned ones are counted by ownedBy
		if len(page) < maxListLimit {
			break
		}
	}
	return n, nil
}

// inFlight is the number of creates of principal in flight on this server.
func (r *registry) inFlight(principal string) int {
	r.createsMu.Lock()
	defer r.createsMu.Unlock()
	return r.creates[principal]
}

// ownedBy is the number of sandboxes the live 2025 sessions of principal
// own on this server.
func (r *registry) ownedBy(principal string) int {
	r.mu.Lock()
	all := make([]*session, 0, len(r.sessions))
	for _, s := range r.sessions {
		all = append(all, s)
	}
	r.mu.Unlock()
	n := 0
	for _, s := range all {
		if s.principal() == principal {
			n += s.ownedCount()
		}
	}
	return n
}

// ownedCount is the number of sandboxes s owns now.
func (s *session) ownedCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.owned)
}
