package conformance

func delegationSpecs() []Spec { return nil }
