package conformance

func boundsSpecs() []Spec { return nil }
