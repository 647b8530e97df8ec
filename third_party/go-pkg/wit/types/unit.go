package wit_types

type Unit struct{}
