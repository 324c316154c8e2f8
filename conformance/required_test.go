package conformance

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sandboxkit/sandboxkit/evidence"
)

var updateRequired = flag.Bool("update", false, "rewrite evidence/required/<Version>.txt from the spec catalog")

// TestRequiredSpecList keeps the repository's required-spec list of the
// current kit version (what evidence verification demands) equal to the
// catalog. After adding, removing or relabelling specs, regenerate it with
//
//	go test ./conformance -run TestRequiredSpecList -update
//
// and review the change: it changes what counts as evidence.
func TestRequiredSpecList(t *testing.T) {
	lists := map[evidence.Mode][]string{
		evidence.ModeCloud:    RequiredSpecs(evidence.ModeCloud),
		evidence.ModeLoopback: RequiredSpecs(evidence.ModeLoopback),
	}
	want := evidence.FormatRequired(Version, lists)
	path := filepath.Join("..", "evidence", "required", Version+".txt")
	if *updateRequired {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", path)
		return
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("kit %s has no required-spec list: %v\n(go test ./conformance -run TestRequiredSpecList -update)", Version, err)
	}
	if string(got) != want {
		t.Errorf("%s differs from the catalog; regenerate it with\n\tgo test ./conformance -run TestRequiredSpecList -update\nand review the change", path)
	}
	for mode, ids := range lists {
		embedded, err := evidence.Required(Version, mode)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(embedded, ids) {
			t.Errorf("the evidence package embeds a stale [%s] list: rebuild", mode)
		}
	}
	if len(lists[evidence.ModeCloud]) == 0 {
		t.Error("no spec is required of cloud evidence")
	}
	for _, id := range lists[evidence.ModeCloud] {
		for _, s := range Specs() {
			if s.ID == id && s.NeedsFake {
				t.Errorf("cloud evidence requires %s, which needs the fake", id)
			}
		}
	}
}
