package evidence

import (
	"os"
	"path/filepath"
	"testing"
)

// Every bundle committed under records/ verifies: a cloud record as cloud
// evidence, a loopback example as loopback evidence (and never as cloud).
// A change to a bundle's bytes, or a spec its kit version requires that it
// lacks, fails here before review.
func TestCommittedRecordsVerify(t *testing.T) {
	manifests, err := filepath.Glob(filepath.Join("records", "*", "*", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(manifests) == 0 {
		t.Skip("no records committed")
	}
	for _, m := range manifests {
		dir := filepath.Dir(m)
		t.Run(filepath.ToSlash(dir), func(t *testing.T) {
			loopback := filepath.Base(filepath.Dir(dir)) == "loopback"
			if err := Verify(dir, &VerifyOptions{Cloud: !loopback}); err != nil {
				t.Errorf("%v", err)
			}
			if loopback {
				if err := Verify(dir, &VerifyOptions{Cloud: true}); err == nil {
					t.Error("a loopback record verifies as cloud evidence")
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "SHA256SUMS")); err != nil {
				t.Errorf("no SHA256SUMS: %v", err)
			}
		})
	}
}
