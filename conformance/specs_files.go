package conformance

func filesSpecs() []Spec { return nil }
