package conformance

func renewalSpecs() []Spec { return nil }
