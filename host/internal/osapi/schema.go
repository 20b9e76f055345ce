package osapi

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Keystone validates request bodies with JSON Schema (jsonschema 4.19, Draft 2020-12) and reports
// the first error in the schema's own order: each property in the order the schema lists them,
// then required, then additionalProperties. schemaError is one such error and check walks a
// field's rules in that order, with jsonschema's words.

type schemaError struct {
	// path is where the bad value sits, e.g. ["project", "tags", "0"].
	path     []string
	instance any
	message  string
}

// keystoneBoolean is the enum of keystone.api.validation.parameter_types.boolean.
var keystoneBoolean = []any{true, "True", "TRUE", "true", false, "False", "FALSE", "false", "", "1", "0",
	"y", "Y", "n", "N", "on", "ON", "off", "OFF", "yes", "no"}

// schemaTypes is the "type" keyword of a field.
func schemaTypes(f Field) []string {
	var t []string
	switch f.Type {
	case String, UUID:
		t = []string{"string"}
	case Boolean:
		// Keystone's booleans also take strings (and null).
		return []string{"boolean", "string", "null"}
	case Integer:
		t = []string{"integer"}
	case Strings, CIDRs:
		t = []string{"array"}
	case Object:
		t = []string{"object"}
	}
	if f.Nullable {
		t = append(t, "null")
	}
	return t
}

func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case float64:
		if x == float64(int64(x)) {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "?"
}

func hasType(types []string, v any) bool {
	t := jsonType(v)
	return slices.Contains(types, t) || t == "integer" && slices.Contains(types, "number")
}

// check validates v against the field's rules and returns the first error, or nil.
func (f Field) check(v any, path []string) *schemaError {
	fail := func(msg string) *schemaError { return &schemaError{path: path, instance: v, message: msg} }
	types := schemaTypes(f)
	if !hasType(types, v) {
		reprs := make([]string, len(types))
		for i, t := range types {
			reprs[i] = pyQuote(t)
		}
		return fail(fmt.Sprintf("%s is not of type %s", pyRepr(v), strings.Join(reprs, ", ")))
	}
	if f.Type == Boolean && !slices.ContainsFunc(keystoneBoolean, func(e any) bool { return e == v }) && v != nil {
		reprs := make([]string, len(keystoneBoolean))
		for i, e := range keystoneBoolean {
			reprs[i] = pyRepr(e)
		}
		return fail(fmt.Sprintf("%s is not one of [%s]", pyRepr(v), strings.Join(reprs, ", ")))
	}
	switch x := v.(type) {
	case string:
		n := len([]rune(x))
		if f.MinLen > 0 && n < f.MinLen {
			return fail(fmt.Sprintf("%s is too short", pyRepr(v)))
		}
		if f.MaxLen > 0 && n > f.MaxLen {
			return fail(fmt.Sprintf("%s is too long", pyRepr(v)))
		}
		if f.Pattern != "" && !regexp.MustCompile(f.Pattern).MatchString(x) {
			return fail(fmt.Sprintf("%s does not match %s", pyRepr(v), pyQuote(f.Pattern)))
		}
	case []any:
		if f.MaxItems > 0 && len(x) > f.MaxItems {
			return fail(fmt.Sprintf("%s is too long", pyRepr(v)))
		}
		if f.Unique && len(duplicates(x)) > 0 {
			return fail(fmt.Sprintf("%s has non-unique elements", pyRepr(v)))
		}
		if f.Items != nil {
			for i, it := range x {
				if e := f.Items.check(it, append(slices.Clone(path), strconv.Itoa(i))); e != nil {
					return e
				}
			}
		}
	case map[string]any:
		if f.Props != nil {
			for _, p := range f.Props {
				if pv, ok := x[p.Name]; ok {
					if e := p.check(pv, append(slices.Clone(path), p.Name)); e != nil {
						return e
					}
				}
			}
			var extra []string
			for k := range x {
				if !slices.ContainsFunc(f.Props, func(p Field) bool { return p.Name == k }) {
					extra = append(extra, k)
				}
			}
			if len(extra) > 0 {
				return fail(additionalProperties(extra))
			}
		}
	}
	return nil
}

// additionalProperties is jsonschema's message for keys a schema does not allow.
func additionalProperties(extra []string) string {
	slices.Sort(extra)
	parts := make([]string, len(extra))
	for i, e := range extra {
		parts[i] = pyQuote(e)
	}
	verb := "was"
	if len(extra) > 1 {
		verb = "were"
	}
	return fmt.Sprintf("Additional properties are not allowed (%s %s unexpected)", strings.Join(parts, ", "), verb)
}
