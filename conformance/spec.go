package conformance

import (
	"context"
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
	// FamilyCloud holds the cloud-only specs: they cross-check the server
	// against the real platform through the kit's own SDK.
	FamilyCloud Family = "cloud"
)

// Families lists every family in report order.
func Families() []Family {
	return []Family{FamilyProtocol, FamilyBounds, FamilyDelegation, FamilyDefault, FamilyRenewal, FamilyLeakage,
		FamilyErrors, FamilyCleanup, FamilyExec, FamilyFiles, FamilyBackground, FamilyBinary, FamilyCloud}
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
	// CloudOnly is true when the spec cross-checks the server against a
	// real provider through the kit's SDK; it runs only in cloud mode.
	CloudOnly bool
	// Body runs the check.
	Body func(ctx context.Context, tc *TestContext)
}

// Specs returns every spec of the kit, sorted by family then ID.
func Specs() []Spec {
	var all []Spec
	for _, group := range [][]Spec{
		protocolSpecs(), boundsSpecs(), boundsWithDefaultSpecs(), delegationSpecs(), defaultSpecs(), defaultConcurrentSpecs(),
		renewalSpecs(), renewalEdgeSpecs(), leakageSpecs(), leakageTimeSpecs(), errorSpecs(), cleanupSpecs(), cleanupFaultSpecs(), cleanupEndSpecs(),
		crashSpecs(), execSpecs(), filesSpecs(), backgroundSpecs(), binarySpecs(), transferURLSpecs(), cloudSpecs(),
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

// optionalSpecs are left out of the required-spec lists of evidence, with
// the reason: their outcome depends on how the server is reached, not on
// the server alone.
var optionalSpecs = map[string]string{
	"protocol.transports-identical": "needs two transports of one server: only the in-process reference target offers them, so it is skipped for a server command or URL",
	"cleanup.idle-timeout":          "needs a Streamable HTTP session whose idle timeout the kit knows: skipped for a stdio server command",
	"cleanup.shutdown":              "shuts the server down: skipped for a server URL, which serves the other specs too",
	"cleanup.crash-restart-sweeps":  "kills and restarts the server process: runs only for a stdio server command, skipped for the in-process target and a URL",
}

// RequiredSpecs returns the IDs of the specs an evidence bundle of the
// given mode must hold, each passed: in cloud mode
// every spec that needs no fake (the cloud-only ones included), in
// loopback mode every spec but the cloud-only ones; neither lists the
// optional specs whose outcome depends on the target. The repository's
// list, evidence/required/<Version>.txt, must equal this (a test checks).
func RequiredSpecs(mode evidence.Mode) []string {
	var ids []string
	for _, s := range Specs() {
		if _, optional := optionalSpecs[s.ID]; optional {
			continue
		}
		switch mode {
		case evidence.ModeCloud:
			if !s.NeedsFake {
				ids = append(ids, s.ID)
			}
		case evidence.ModeLoopback:
			if !s.CloudOnly {
				ids = append(ids, s.ID)
			}
		}
	}
	sort.Strings(ids)
	return ids
}
