package conformance

func leakageSpecs() []Spec { return nil }
