package conformance

func defaultSpecs() []Spec { return nil }
