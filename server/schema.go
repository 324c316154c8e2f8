package server

import (
	"encoding/json"
	"strconv"

	"github.com/google/jsonschema-go/jsonschema"
)

// Schemas are written by hand, with every bound, and never inferred: the
// advertised schema is the contract the validator enforces.

// Bounds shared by several tools.
const (
	maxSandboxTimeout = 86400 // seconds (CREATE-1, TIMEOUT-1)
	maxCommandTimeout = 3600  // seconds (EXEC-1)
	maxListLimit      = 100   // LIST-3
	maxListOffset     = 10000 // LIST-3: bounded so one call walks at most 101 pages
	maxCPU            = 256
	maxMemoryMB       = 1 << 20 // 1 TiB in MB
	maxEnvs           = 128
	maxEnvValueLen    = 32 << 10
	maxPathLen        = 4096
	maxCommandLen     = 256 << 10
)

// Patterns of identifiers.
const (
	// sandboxIDPattern is a bare ID or "provider:id" (META-5).
	sandboxIDPattern = `^([a-z][a-z0-9_-]{0,31}:)?[A-Za-z0-9][A-Za-z0-9_-]{0,127}$`
	providerPattern  = `^[a-z][a-z0-9_-]{0,31}$`
	regionPattern    = `^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`
	templatePattern  = `^[A-Za-z0-9][A-Za-z0-9_./:-]{0,127}$`
	envNamePattern   = `^[A-Za-z_][A-Za-z0-9_]{0,255}$`
)

func ptr[T any](v T) *T { return &v }

// falseSchema is the JSON Schema `false`.
func falseSchema() *jsonschema.Schema { return &jsonschema.Schema{Not: &jsonschema.Schema{}} }

// field is one property of an object schema, named once: its name, its
// schema, and whether it is required.
type field struct {
	name     string
	schema   *jsonschema.Schema
	required bool
}

// req is a required property.
func req(name string, s *jsonschema.Schema) field {
	return field{name: name, schema: s, required: true}
}

// opt is an optional property.
func opt(name string, s *jsonschema.Schema) field { return field{name: name, schema: s} }

// object is a closed object schema: additionalProperties false, the fields
// in the given order, and the required ones listed in that order.
func object(desc string, fields ...field) *jsonschema.Schema {
	s := &jsonschema.Schema{
		Type:                 "object",
		Description:          desc,
		Properties:           make(map[string]*jsonschema.Schema, len(fields)),
		AdditionalProperties: falseSchema(),
	}
	for _, f := range fields {
		if _, dup := s.Properties[f.name]; dup {
			panic("server: schema property " + f.name + " defined twice")
		}
		s.Properties[f.name] = f.schema
		s.PropertyOrder = append(s.PropertyOrder, f.name)
		if f.required {
			s.Required = append(s.Required, f.name)
		}
	}
	return s
}

func withDefault(s *jsonschema.Schema, v any) *jsonschema.Schema {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	s.Default = data
	return s
}

// integer is an integer in [lo, hi]: booleans, strings, null and 1.5 are
// rejected (VAL-1), and so is anything out of range (VAL-2).
func integer(desc string, lo, hi int) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "integer", Description: desc, Minimum: ptr(float64(lo)), Maximum: ptr(float64(hi))}
}

// str is a string of 1 to maxLen characters; an explicit "" is rejected.
func str(desc string, maxLen int, pattern string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Description: desc, MinLength: ptr(1), MaxLength: ptr(maxLen), Pattern: pattern}
}

// enum is one of the given strings.
func enum(desc string, values ...string) *jsonschema.Schema {
	vs := make([]any, len(values))
	for i, v := range values {
		vs[i] = v
	}
	return &jsonschema.Schema{Type: "string", Description: desc, Enum: vs}
}

// sandboxIDArg is the optional sandbox_id of every per-sandbox tool. VAL-3:
// an explicit "" is rejected by minLength; it never means the default.
func sandboxIDArg(desc string) *jsonschema.Schema {
	return str(desc, 161, sandboxIDPattern)
}

// envsArg is an object of environment variable names to string values (VAL-5).
func envsArg(desc string) *jsonschema.Schema {
	return &jsonschema.Schema{
		Type:                 "object",
		Description:          desc,
		MaxProperties:        ptr(maxEnvs),
		PropertyNames:        &jsonschema.Schema{Type: "string", Pattern: envNamePattern},
		AdditionalProperties: &jsonschema.Schema{Type: "string", MaxLength: ptr(maxEnvValueLen)},
	}
}

// nullable returns a schema accepting t or null, spelled as anyOf with one
// type per branch rather than a type array: both mean the same in draft-07
// (what the TypeScript client's Ajv reads) and 2020-12 (what the MCP
// specification names), and clients that map schemas onto a single-type
// dialect accept it (the Inspector CLI's tools/list --strict flags type
// arrays as non-portable).
func nullable(t, desc string) *jsonschema.Schema {
	return &jsonschema.Schema{Description: desc, AnyOf: []*jsonschema.Schema{{Type: t}, {Type: "null"}}}
}

// metadataSchema is the output schema of one sandbox's metadata: exactly the
// nine keys, all required, times RFC 3339 UTC or null, unreported resources
// null (META-1..3).
func metadataSchema(desc string) *jsonschema.Schema {
	dt := func(d string) *jsonschema.Schema {
		s := nullable("string", d)
		s.AnyOf[0].Format = "date-time"
		return s
	}
	return object(desc,
		req("sandbox_id", &jsonschema.Schema{Type: "string", Description: "The ID to pass back: bare for the default provider, provider:id for any other."}),
		req("template", &jsonschema.Schema{Type: "string", Description: "Template alias or ID the sandbox was created from."}),
		req("status", &jsonschema.Schema{Type: "string", Description: "Platform state, e.g. running or paused."}),
		req("region", nullable("string", "Region, or null when unknown.")),
		req("started_at", dt("Start time, RFC 3339 in UTC, or null.")),
		req("end_at", dt("Time the sandbox will be destroyed unless renewed, RFC 3339 in UTC, or null.")),
		req("cpu_count", nullable("integer", "vCPUs, or null when the platform did not report them.")),
		req("memory_mb", nullable("integer", "Memory in MB, or null when not reported.")),
		req("disk_size_mb", nullable("integer", "Disk size in MB, or null when not reported.")),
	)
}

// itoa is strconv.Itoa, for descriptions.
func itoa(n int) string { return strconv.Itoa(n) }
