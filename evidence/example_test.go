package evidence_test

import (
	"fmt"

	"github.com/sandboxkit/sandboxkit/evidence"
)

// Verify checks a committed loopback bundle: its checksums, manifest,
// required specs and the absence of secrets. With Cloud set it would refuse
// it, since loopback evidence is no cloud evidence.
func ExampleVerify() {
	dir := "records/loopback/2026-12-04"
	fmt.Println(evidence.Verify(dir, nil))
	err := evidence.Verify(dir, &evidence.VerifyOptions{Cloud: true})
	fmt.Println(err != nil)
	// Output:
	// <nil>
	// true
}
