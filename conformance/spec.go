package conformance

import (
	"context"
	"fmt"
	"sort"

	"github.com/sandboxkit/sandboxkit/evidence"
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
	// FamilyLease holds the lease rules that replace the session rules for
	// modern requests and sessionless profiles (LEASE-1..4, MODERN-1).
	FamilyLease Family = "lease"
	// FamilyHandles holds the handle rules (HANDLE-1..4).
	FamilyHandles Family = "handles"
	// FamilyCloud holds the cloud-only specs: they cross-check the server
	// against the real platform through the kit's own SDK.
	FamilyCloud Family = "cloud"
)

// Families lists every family in report order: the order of their
// registrations.
func Families() []Family {
	var fs []Family
	for _, r := range registrations() {
		fs = append(fs, r.family)
	}
	return fs
}

// LabelNeedsFake marks specs that need the fake provider's internals
// (journal, faults, seeding): cloud mode leaves them out.
const LabelNeedsFake = "needs-fake"

// LabelCloudOnly marks specs that need a real provider: they run only in
// cloud mode and are skipped against the fake.
const LabelCloudOnly = "cloud-only"

// Spec is one conformance check.
type Spec struct {
	// ID is stable across releases (e.g. "bounds.list-limit"); reports and
	// required-spec lists use it.
	ID string
	// Title is a behaviour sentence ("rejects an out-of-range limit ...").
	Title string
	// Family is the spec's family. A spec's literal leaves it out: the
	// family's registration (registrations) sets it.
	Family Family
	// Rules are the contract rule IDs the spec checks.
	Rules []string
	// Tools are the contract tools the spec needs; when the server does not
	// advertise one the spec is skipped (or fails with RequireAll).
	Tools []string
	// NeedsFake is true when the spec reads the fake's journal, injects
	// faults or seeds sandboxes. A family whose every spec needs the fake
	// sets it at registration; a spec sets it only in a family that does
	// not.
	NeedsFake bool
	// CloudOnly is true when the spec cross-checks the server against a
	// real provider through the kit's SDK; it runs only in cloud mode.
	// Only the cloud family's registration sets it.
	CloudOnly bool
	// Optional, when set, says why the spec is left out of the
	// required-spec lists of evidence: its outcome depends on how the
	// server is reached, not on the server alone.
	Optional string
	// Process is true when the spec needs the server as a process the kit
	// starts, signals and kills (a stdio command), or one whose provider
	// connections are its own: when the run's target is the in-process
	// reference server and the run has the reference server's command
	// (RunOptions.ProcessCommand, which "sandboxkit conform" gives), the
	// spec runs against that command instead (target_process.go).
	Process bool
	// Body runs the check.
	Body func(ctx context.Context, tc *TestContext)
}

// registration is one family's place in the catalog: its specs, and what
// every one of them shares, said once here rather than in each literal
// (the model: csi-test's DescribeSanity, whose setup registration
// supplies).
type registration struct {
	family Family
	// defaults holds the NeedsFake and CloudOnly every spec of the family
	// has; a spec may add NeedsFake to a family that lacks it.
	defaults Spec
	// before, when set, runs ahead of every body of the family.
	before func(ctx context.Context, tc *TestContext)
	// specs are the family's spec lists, keyed literals without Family.
	specs []func() []Spec
}

// registrations lists the families in report order with their specs.
func registrations() []registration {
	fake := Spec{NeedsFake: true}
	return []registration{
		{family: FamilyProtocol, specs: lists(protocolSpecs)},
		{family: FamilyBounds, defaults: fake, specs: lists(boundsSpecs, boundsWithDefaultSpecs)},
		{family: FamilyDelegation, defaults: fake, specs: lists(delegationSpecs)},
		{family: FamilyDefault, defaults: fake, specs: lists(defaultSpecs)},
		{family: FamilyRenewal, defaults: fake, specs: lists(renewalSpecs)},
		{family: FamilyLeakage, defaults: fake, specs: lists(leakageSpecs)},
		{family: FamilyErrors, defaults: fake, specs: lists(errorSpecs, deadlineSpecs)},
		{family: FamilyCleanup, defaults: fake, specs: lists(cleanupSpecs, crashSpecs, shutdownHTTPSpecs, ownersSpecs)},
		{family: FamilyExec, specs: lists(execSpecs)},
		{family: FamilyFiles, specs: lists(filesSpecs)},
		{family: FamilyBackground, specs: lists(backgroundSpecs)},
		{family: FamilyBinary, specs: lists(binarySpecs)},
		{family: FamilyLease, defaults: fake, specs: lists(leaseSpecs)},
		{family: FamilyHandles, specs: lists(handleSpecs)},
		{family: FamilyCloud, defaults: Spec{CloudOnly: true}, before: cloudModeOnly, specs: lists(cloudSpecs)},
	}
}

// lists names a family's spec lists.
func lists(fs ...func() []Spec) []func() []Spec { return fs }

// register fills in the family and its defaults, and refuses a spec that
// contradicts its family or repeats what the family already says.
func (r registration) register(s Spec) (Spec, error) {
	switch {
	case s.Family != "" && s.Family != r.family:
		return s, fmt.Errorf("spec %s: family %q, registered under %q", s.ID, s.Family, r.family)
	case s.Family != "":
		return s, fmt.Errorf("spec %s: names its family %q, which registration sets", s.ID, s.Family)
	case s.NeedsFake && r.defaults.NeedsFake:
		return s, fmt.Errorf("spec %s: sets NeedsFake, which family %q sets for every spec", s.ID, r.family)
	case s.CloudOnly:
		return s, fmt.Errorf("spec %s: sets CloudOnly, which only a family's registration sets", s.ID)
	case s.NeedsFake && r.defaults.CloudOnly:
		return s, fmt.Errorf("spec %s: needs the fake in cloud-only family %q: it could never run", s.ID, r.family)
	}
	s.Family = r.family
	s.NeedsFake = s.NeedsFake || r.defaults.NeedsFake
	s.CloudOnly = r.defaults.CloudOnly
	if before, body := r.before, s.Body; before != nil && body != nil {
		s.Body = func(ctx context.Context, tc *TestContext) {
			before(ctx, tc)
			body(ctx, tc)
		}
	}
	return s, nil
}

// Specs returns every spec of the kit, sorted by family then ID. It panics
// on a spec that contradicts its family's registration: a mistake in the
// kit that every test run meets at once.
func Specs() []Spec {
	var all []Spec
	for _, r := range registrations() {
		var family []Spec
		for _, list := range r.specs {
			for _, s := range list() {
				s, err := r.register(s)
				if err != nil {
					panic(fmt.Errorf("conformance catalog: %w", err))
				}
				family = append(family, s)
			}
		}
		sort.SliceStable(family, func(i, j int) bool { return family[i].ID < family[j].ID })
		all = append(all, family...)
	}
	return all
}

// RequiredSpecs returns the run IDs (see [Era]) an evidence bundle of the
// given mode must hold, each passed: in cloud mode every spec that needs
// no fake (the cloud-only ones included), in 2025 sessions only (a cloud
// run does not probe 2026-07-28); in loopback mode every spec but the
// cloud-only ones, in each era whose rules apply to the contract's design
// (a server of both eras). Neither lists the optional specs whose outcome
// depends on the target. The repository's list,
// evidence/required/<Version>.txt, must equal this (a test checks).
func RequiredSpecs(mode evidence.Mode) []string {
	var ids []string
	contract := &Config{}
	for _, s := range Specs() {
		if s.Optional != "" {
			continue
		}
		switch mode {
		case evidence.ModeCloud:
			// A cloud run speaks 2025 sessions only (it does not probe
			// 2026-07-28), so the rules of modern requests (section 13)
			// and the comparison of the eras are not asked of it.
			if !s.NeedsFake && !leaseFamily(s.Family) && !s.comparesEras() {
				ids = append(ids, s.ID)
			}
		case evidence.ModeLoopback:
			if s.CloudOnly {
				continue
			}
			for _, era := range specEras(s) {
				if eraNeutral(s.Family) || contract.eraNotApplicable(s, era, true, true) == "" {
					ids = append(ids, runID(s.ID, era))
				}
			}
		}
	}
	sort.Strings(ids)
	return ids
}
