package conformance

func binarySpecs() []Spec { return nil }
