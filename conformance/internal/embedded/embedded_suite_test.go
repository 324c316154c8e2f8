package embedded_test

import (
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/sandboxkit/sandboxkit/conformance"
)

// TestEmbedded runs a Ginkgo suite of its own that embeds the kit, the way
// a project with an existing suite would. The suite has its own specs and
// containers; the kit's specs run inside them unchanged.
func TestEmbedded(t *testing.T) {
	gomega.RegisterFailHandler(ginkgo.Fail)
	suiteCfg, reporterCfg := ginkgo.GinkgoConfiguration()
	// Keep the self-test short: the protocol family and one bounds spec.
	suiteCfg.LabelFilter = "protocol || bounds.list-sandboxes || host"
	ginkgo.RunSpecs(t, "embedding suite", suiteCfg, reporterCfg)
}

// cfg is read by the kit when its specs run, so a BeforeEach of the host
// suite may still change it.
var cfg = conformance.NewConfig()

var _ = ginkgo.Describe("a host suite", ginkgo.Label("host"), func() {
	ginkgo.It("runs its own specs beside the kit's", func() {
		gomega.Expect(cfg.Kind()).To(gomega.Equal(conformance.TargetInProcess))
	})
})

var _ = ginkgo.Describe("the kit, embedded", func() {
	ginkgo.BeforeEach(func() { cfg.CallTimeout = cfg.CallTimeout + 0 })
	conformance.Describe(cfg)
})
