package conformance

func cleanupSpecs() []Spec { return nil }
