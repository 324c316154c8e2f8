package conformance

import (
	"context"
	"sort"
)

// Family groups specs by what they check; each is also a Ginkgo label.
type Family string

// The families.
const (
	FamilyBounds     Family = "bounds"
	FamilyDelegation Family = "delegation"
	FamilyDefault    Family = "default"
	FamilyRenewal    Family = "renewal"
	FamilyLeakage    Family = "leakage"
	FamilyErrors     Family = "errors"
	FamilyCleanup    Family = "cleanup"
	FamilyExec       Family = "exec"
	FamilyFiles      Family = "files"
	FamilyBackground Family = "background"
	FamilyBinary     Family = "binary"
	FamilyProtocol   Family = "protocol"
)

// Families lists every family in report order.
func Families() []Family {
	return []Family{FamilyProtocol, FamilyBounds, FamilyDelegation, FamilyDefault, FamilyRenewal, FamilyLeakage,
		FamilyErrors, FamilyCleanup, FamilyExec, FamilyFiles, FamilyBackground, FamilyBinary}
}

// LabelNeedsFake marks specs that need the fake provider's internals
// (journal, faults, seeding): cloud mode leaves them out.
const LabelNeedsFake = "needs-fake"

// Spec is one conformance check.
type Spec struct {
	// ID is stable across releases (e.g. "bounds.list-limit"); reports and
	// required-spec lists use it.
	ID string
	// Title is a behaviour sentence ("rejects an out-of-range limit ...").
	Title string
	// Family is the spec's family.
	Family Family
	// Rules are the contract rule IDs the spec checks.
	Rules []string
	// Tools are the contract tools the spec needs; when the server does not
	// advertise one the spec is skipped (or fails with RequireAll).
	Tools []string
	// NeedsFake is true when the spec reads the fake's journal, injects
	// faults or seeds sandboxes.
	NeedsFake bool
	// Body runs the check.
	Body func(ctx context.Context, tc *TestContext)
}

// Specs returns every spec of the kit, sorted by family then ID.
func Specs() []Spec {
	var all []Spec
	for _, group := range [][]Spec{
		protocolSpecs(), boundsSpecs(), delegationSpecs(), defaultSpecs(), renewalSpecs(), leakageSpecs(),
		errorSpecs(), cleanupSpecs(), execSpecs(), filesSpecs(), backgroundSpecs(), binarySpecs(),
	} {
		all = append(all, group...)
	}
	order := map[Family]int{}
	for i, f := range Families() {
		order[f] = i
	}
	sort.SliceStable(all, func(i, j int) bool {
		if order[all[i].Family] != order[all[j].Family] {
			return order[all[i].Family] < order[all[j].Family]
		}
		return all[i].ID < all[j].ID
	})
	return all
}
