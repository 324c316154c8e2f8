package conformance

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
)

// A tool map adapts a server whose tools differ from the contract's in
// names, argument names, units or result shape, so that the specs stay
// written in contract terms: [Session.CallRaw] renames and scales the
// arguments on the way out and normalises the result on the way back.
// conformance/README.md ("Tool maps") documents the file format.

// ToolAdapter is one entry of a tool map: how the server's version of one
// contract tool differs from the contract's.
type ToolAdapter struct {
	// Name is the server's name for the tool; empty keeps the contract's.
	Name string
	// Args maps contract argument names to the server's.
	Args map[string]ArgAdapter
	// Result says where the result's values are.
	Result ResultAdapter
}

// ArgAdapter is how one contract argument reaches the server.
type ArgAdapter struct {
	// Name is the server's argument name.
	Name string
	// Scale multiplies a numeric value (1000 turns seconds into
	// milliseconds); 0 means 1. Values that are not numbers pass unscaled.
	Scale float64
}

// Result sources of a [ResultAdapter].
const (
	// ResultStructured reads structuredContent, as the contract has it
	// (the default). A success without it is read from its text block's
	// JSON instead, and reported once, as a TOOLS-3 finding of the run.
	ResultStructured = "structuredContent"
	// ResultTextJSON reads the JSON object in the text block (TOOLS-3 is
	// still reported when structuredContent is absent).
	ResultTextJSON = "text-json"
	// ResultPattern reads each field with a regular expression over the
	// text: its first group is the field's value (a string).
	ResultPattern = "pattern"
)

// ResultAdapter says where a successful result's values are.
type ResultAdapter struct {
	// From is [ResultStructured] (empty means it), [ResultTextJSON] or
	// [ResultPattern].
	From string
	// Fields maps contract result fields to the server's member names
	// (structuredContent, text-json) or to a regular expression with one
	// group (pattern).
	Fields map[string]string
	// Scales divides a numeric result member by its scale on the way
	// back, keyed by contract field: 1000 reads the server's milliseconds
	// as the contract's seconds (the inverse of [ArgAdapter].Scale). Not
	// with [ResultPattern], whose values are strings.
	Scales map[string]float64

	patterns map[string]*regexp.Regexp
}

// ParseToolMap reads a tool map file: a JSON object whose keys are
// contract tool names and whose values are either the server's name for
// the tool (the plain form) or an object {"name", "args", "result"}. Every
// problem is reported at once, each naming its entry.
func ParseToolMap(data []byte) (map[string]ToolAdapter, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("a tool map is a JSON object of contract tool names: %w", err)
	}
	out := map[string]ToolAdapter{}
	var errs []error
	for _, tool := range mapKeysSorted(raw) {
		a, err := parseToolEntry(raw[tool])
		if err != nil {
			errs = append(errs, fmt.Errorf("tool map entry %q: %w", tool, err))
			continue
		}
		out[tool] = a
	}
	if err := validateToolMap(out); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

func parseToolEntry(data json.RawMessage) (ToolAdapter, error) {
	var name string
	if json.Unmarshal(data, &name) == nil {
		return ToolAdapter{Name: name}, nil
	}
	var e struct {
		Name   string                     `json:"name"`
		Args   map[string]json.RawMessage `json:"args"`
		Result json.RawMessage            `json:"result"`
	}
	if err := strictDecode(data, &e); err != nil {
		return ToolAdapter{}, fmt.Errorf(`want the server's tool name or an object with "name", "args" and "result": %w`, err)
	}
	a := ToolAdapter{Name: e.Name}
	var errs []error
	for _, arg := range mapKeysSorted(e.Args) {
		var to string
		if json.Unmarshal(e.Args[arg], &to) == nil {
			a.setArg(arg, ArgAdapter{Name: to})
			continue
		}
		var o struct {
			Name  string  `json:"name"`
			Scale float64 `json:"scale"`
		}
		if err := strictDecode(e.Args[arg], &o); err != nil {
			errs = append(errs, fmt.Errorf(`argument %q: want the server's argument name or {"name", "scale"}: %w`, arg, err))
			continue
		}
		a.setArg(arg, ArgAdapter(o))
	}
	if len(e.Result) > 0 {
		var from string
		if json.Unmarshal(e.Result, &from) == nil {
			a.Result.From = from
		} else {
			var o struct {
				From   string                     `json:"from"`
				Fields map[string]json.RawMessage `json:"fields"`
			}
			if err := strictDecode(e.Result, &o); err != nil {
				errs = append(errs, fmt.Errorf(`result: want %q, %q or {"from", "fields"}: %w`, ResultStructured, ResultTextJSON, err))
			}
			a.Result.From = o.From
			errs = append(errs, a.Result.parseFields(o.Fields))
		}
	}
	return a, errors.Join(errs...)
}

// parseFields reads a result's "fields": each contract field maps to the
// server's member name (or pattern), or to {"name", "scale"}.
func (r *ResultAdapter) parseFields(fields map[string]json.RawMessage) error {
	var errs []error
	for _, f := range mapKeysSorted(fields) {
		var name string
		if json.Unmarshal(fields[f], &name) == nil {
			r.setField(f, name, 0)
			continue
		}
		var o struct {
			Name  string  `json:"name"`
			Scale float64 `json:"scale"`
		}
		if err := strictDecode(fields[f], &o); err != nil {
			errs = append(errs, fmt.Errorf(`result field %q: want the server's member name or {"name", "scale"}: %w`, f, err))
			continue
		}
		r.setField(f, o.Name, o.Scale)
	}
	return errors.Join(errs...)
}

func (r *ResultAdapter) setField(field, name string, scale float64) {
	if r.Fields == nil {
		r.Fields = map[string]string{}
	}
	r.Fields[field] = name
	if scale != 0 {
		if r.Scales == nil {
			r.Scales = map[string]float64{}
		}
		r.Scales[field] = scale
	}
}

func (a *ToolAdapter) setArg(name string, arg ArgAdapter) {
	if a.Args == nil {
		a.Args = map[string]ArgAdapter{}
	}
	a.Args[name] = arg
}

// strictDecode decodes one JSON object, refusing unknown keys.
func strictDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// validateToolMap checks every entry and compiles its patterns; it reports
// every problem at once, each naming its entry.
func validateToolMap(m map[string]ToolAdapter) error {
	var errs []error
	for _, tool := range mapKeysSorted(m) {
		a := m[tool]
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("tool map entry %q: %s", tool, fmt.Sprintf(format, args...)))
		}
		if !isContractTool(tool) {
			bad("not a contract tool (want one of %s)", strings.Join(ContractTools(), ", "))
		}
		if a.Name == "" && len(a.Args) == 0 && a.Result.From == "" && len(a.Result.Fields) == 0 {
			bad("maps to an empty name")
		}
		for _, arg := range mapKeysSorted(a.Args) {
			switch x := a.Args[arg]; {
			case x.Name == "":
				bad("argument %q maps to an empty name", arg)
			case x.Scale < 0:
				bad("argument %q: scale %v must be positive", arg, x.Scale)
			}
		}
		r := &a.Result
		for _, f := range mapKeysSorted(r.Scales) {
			switch {
			case r.Scales[f] <= 0:
				bad("result field %q: scale %v must be positive", f, r.Scales[f])
			case r.From == ResultPattern:
				bad(`result field %q: a scale needs a number, and "pattern" reads strings`, f)
			}
		}
		for _, f := range mapKeysSorted(r.Fields) {
			if r.Fields[f] == "" {
				bad("result field %q maps to an empty name", f)
			}
		}
		switch r.From {
		case "", ResultStructured, ResultTextJSON:
		case ResultPattern:
			if len(r.Fields) == 0 {
				bad(`result: "pattern" needs "fields", each a regular expression with one group`)
			}
			r.patterns = map[string]*regexp.Regexp{}
			for _, f := range mapKeysSorted(r.Fields) {
				re, err := regexp.Compile(r.Fields[f])
				switch {
				case err != nil:
					bad("result field %q: bad regular expression: %v", f, err)
				case re.NumSubexp() < 1:
					bad("result field %q: the regular expression %q has no group to read the value from", f, r.Fields[f])
				default:
					r.patterns[f] = re
				}
			}
		default:
			bad("result: unknown source %q (want %q, %q or %q)", r.From, ResultStructured, ResultTextJSON, ResultPattern)
		}
		m[tool] = a
	}
	return errors.Join(errs...)
}

func mapKeysSorted[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// adapter returns the tool map entry of a contract tool (the zero adapter
// when it has none).
func (c *Config) adapter(tool string) ToolAdapter {
	return c.Tools[tool]
}

// adaptArgs renames and scales the arguments of one call for the server.
// Arguments that are not a JSON object (a bounds spec's malformed bytes)
// and arguments the map does not name pass unchanged.
func (a ToolAdapter) adaptArgs(args json.RawMessage) json.RawMessage {
	if len(a.Args) == 0 {
		return args
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil || m == nil {
		return args
	}
	out := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		x, ok := a.Args[k]
		if !ok {
			out[k] = v
			continue
		}
		if x.Scale != 0 && x.Scale != 1 {
			// Only whole numbers are scaled: 1.5 s must stay a non-integer
			// for the bounds specs, not become a valid 1500 ms.
			var n float64
			if json.Unmarshal(v, &n) == nil && n == math.Trunc(n) {
				if scaled, err := json.Marshal(n * x.Scale); err == nil {
					v = scaled
				}
			}
		}
		out[x.Name] = v
	}
	data, err := json.Marshal(out)
	if err != nil {
		return args
	}
	return data
}

// normalise reads a successful result's values where the adapter says
// they are and renames them to the contract's. It sets r.fromText when
// the values came from the text block because structuredContent was
// absent (TOOLS-3).
func (a ToolAdapter) normalise(r *Result) {
	if r.IsError && r.errObject != nil {
		// VAL-6: the field a validation error names, in contract terms.
		if f, ok := r.errObject["field"].(string); ok {
			for contract, x := range a.Args {
				if x.Name == f {
					r.errObject["field"] = contract
				}
			}
		}
	}
	if !r.arrived || r.IsError {
		return
	}
	switch a.Result.From {
	case ResultPattern:
		m := map[string]any{}
		for f, expr := range a.Result.Fields {
			re := a.Result.patterns[f]
			if re == nil {
				// Set in code rather than read by ParseToolMap: Validate
				// has checked that it compiles.
				var err error
				if re, err = regexp.Compile(expr); err != nil || re.NumSubexp() < 1 {
					continue
				}
			}
			if g := re.FindStringSubmatch(r.Text); g != nil {
				m[f] = g[1]
			}
		}
		r.Structured, r.fromText = m, r.structured == nil
		return
	case ResultTextJSON:
		if m, ok := textObject(r.Text); ok {
			r.Structured, r.fromText = m, r.structured == nil
		}
	default:
		if r.Structured == nil && r.structured == nil {
			if m, ok := textObject(r.Text); ok {
				r.Structured, r.fromText = m, true
			}
		}
	}
	for contract, server := range a.Result.Fields {
		if v, ok := r.Structured[server]; ok && server != contract {
			r.Structured[contract] = v
			delete(r.Structured, server)
		}
	}
	for contract, scale := range a.Result.Scales {
		if n, ok := r.Structured[contract].(float64); ok && scale > 0 {
			r.Structured[contract] = n / scale
		}
	}
}

// textObject parses a text block holding one JSON object.
func textObject(text string) (map[string]any, bool) {
	var m map[string]any
	if json.Unmarshal([]byte(strings.TrimSpace(text)), &m) != nil || m == nil {
		return nil, false
	}
	return m, true
}
