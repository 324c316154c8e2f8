package envdapi

import "encoding/json"

// Codec is a connect codec named "json" that marshals the plain structs of
// this package with encoding/json instead of protojson.
type Codec struct{}

// Name returns "json", the Connect codec name for JSON bodies.
func (Codec) Name() string { return "json" }

// Marshal encodes v as JSON.
func (Codec) Marshal(v any) ([]byte, error) { return json.Marshal(v) }

// Unmarshal decodes JSON data into v.
func (Codec) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }
