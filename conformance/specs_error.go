package conformance

func errorSpecs() []Spec { return nil }
