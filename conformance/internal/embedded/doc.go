// Package embedded holds the self-test of embedding the kit in another
// Ginkgo suite with conformance.Describe; it has no code of its own.
package embedded
