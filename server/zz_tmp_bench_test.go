package server_test

import (
	"os"
	"testing"
)

// BenchmarkZZOneEra runs one era only (SANDBOXKIT_ERA), for profiling.
func BenchmarkZZOneEra(b *testing.B) {
	era := os.Getenv("SANDBOXKIT_ERA")
	tool := os.Getenv("SANDBOXKIT_TOOL")
	r := newEraRig(b)
	ops := eraLoad(b, r, tool, eraVersions[era], 8)
	b.ResetTimer()
	c := processCPU()
	runCalls(ops, int64(b.N))
	b.ReportMetric(float64((processCPU()-c).Microseconds())/float64(b.N), "cpu-us/op")
}
