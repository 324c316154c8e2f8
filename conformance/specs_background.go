package conformance

func backgroundSpecs() []Spec { return nil }
