package osapi

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Ironic validates request bodies with jsonschema 4.19 (Draft 4 schemas) and reports the one
// error jsonschema's best_match picks, in jsonschema's words. jsonSchema is the subset of the
// keywords Ironic's schemas use, and validate walks them in the order Python's jsonschema does:
// the schema's keywords in the order they are written, each object's properties in the schema's
// order. (Keystone's validator, schema.go, reports the first error instead.)

type jsonSchema struct {
	// Types is the "type" keyword: "string", "null", "object", "array", "integer", "boolean".
	Types []string
	// MinLength, MaxLength (strings) and MinItems (lists) are unset when 0 (Ironic's schemas set
	// no 0 bound that matters); Minimum applies to integers when HasMinimum.
	MinLength, MaxLength, MinItems int
	Minimum                        int
	HasMinimum                     bool
	Pattern                        string
	Enum                           []any
	AnyOf                          []*jsonSchema
	// Props are an object's known keys in the schema's order; Required and NoExtra
	// (additionalProperties: false) apply to objects.
	Props    []jsonProp
	Required []string
	NoExtra  bool
	Items    *jsonSchema
}

type jsonProp struct {
	Name   string
	Schema *jsonSchema
}

// schemaFault is one jsonschema ValidationError: where, which keyword, the message, and for
// anyOf the errors of each branch (its context).
type schemaFault struct {
	path      int
	validator string
	message   string
	// typeMismatch: the instance does not match the failing schema's "type" (jsonschema's
	// _matches_type, one of best_match's tie-breakers).
	typeMismatch bool
	context      []schemaFault
}

// validate returns every error of v against s, in jsonschema's iteration order; depth is the
// length of v's path in the document.
func (s *jsonSchema) validate(v any, depth int) []schemaFault {
	var out []schemaFault
	add := func(validator, msg string) {
		out = append(out, schemaFault{path: depth, validator: validator, message: msg, typeMismatch: s.typeMismatch(v)})
	}
	if len(s.Types) > 0 && !s.matchesType(v) {
		if len(s.Types) == 1 {
			add("type", fmt.Sprintf("%s is not of type %s", pyRepr(v), pyQuote(s.Types[0])))
		} else {
			reprs := make([]string, len(s.Types))
			for i, t := range s.Types {
				reprs[i] = pyQuote(t)
			}
			add("type", fmt.Sprintf("%s is not of type %s", pyRepr(v), strings.Join(reprs, ", ")))
		}
	}
	switch x := v.(type) {
	case string:
		n := len([]rune(x))
		if s.MinLength > 0 && n < s.MinLength {
			add("minLength", fmt.Sprintf("%s is too short", pyRepr(v)))
		}
		if s.MaxLength > 0 && n > s.MaxLength {
			add("maxLength", fmt.Sprintf("%s is too long", pyRepr(v)))
		}
		if s.Pattern != "" && !regexp.MustCompile(s.Pattern).MatchString(x) {
			add("pattern", fmt.Sprintf("%s does not match %s", pyRepr(v), pyQuote(s.Pattern)))
		}
	case float64:
		if s.HasMinimum && jsonType(v) == "integer" && x < float64(s.Minimum) {
			add("minimum", fmt.Sprintf("%s is less than the minimum of %d", pyRepr(v), s.Minimum))
		}
	}
	if len(s.AnyOf) > 0 {
		var ctx []schemaFault
		ok := false
		for _, branch := range s.AnyOf {
			errs := branch.validate(v, depth)
			if len(errs) == 0 {
				ok = true
				break
			}
			ctx = append(ctx, errs...)
		}
		if !ok {
			out = append(out, schemaFault{path: depth, validator: "anyOf", typeMismatch: s.typeMismatch(v),
				message: fmt.Sprintf("%s is not valid under any of the given schemas", pyRepr(v)), context: ctx})
		}
	}
	if len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(e any) bool { return pyRepr(e) == pyRepr(v) }) {
		reprs := make([]string, len(s.Enum))
		for i, e := range s.Enum {
			reprs[i] = pyRepr(e)
		}
		add("enum", fmt.Sprintf("%s is not one of [%s]", pyRepr(v), strings.Join(reprs, ", ")))
	}
	switch x := v.(type) {
	case []any:
		if s.MinItems > 0 && len(x) < s.MinItems {
			add("minItems", fmt.Sprintf("%s is too short", pyRepr(v)))
		}
		if s.Items != nil {
			for _, it := range x {
				out = append(out, s.Items.validate(it, depth+1)...)
			}
		}
	case map[string]any:
		for _, p := range s.Props {
			if pv, ok := x[p.Name]; ok {
				out = append(out, p.Schema.validate(pv, depth+1)...)
			}
		}
		for _, req := range s.Required {
			if _, ok := x[req]; !ok {
				add("required", fmt.Sprintf("%s is a required property", pyQuote(req)))
			}
		}
		if s.NoExtra {
			var extra []string
			for k := range x {
				if !slices.ContainsFunc(s.Props, func(p jsonProp) bool { return p.Name == k }) {
					extra = append(extra, k)
				}
			}
			if len(extra) > 0 {
				add("additionalProperties", additionalProperties(extra))
			}
		}
	}
	return out
}

// typeMismatch is "not error._matches_type()": true when the schema names no type, or one v is
// not of.
func (s *jsonSchema) typeMismatch(v any) bool { return len(s.Types) == 0 || !s.matchesType(v) }

func (s *jsonSchema) matchesType(v any) bool {
	if len(s.Types) == 0 {
		return true
	}
	t := jsonType(v)
	return slices.Contains(s.Types, t) || t == "integer" && slices.Contains(s.Types, "number")
}

// relevance is jsonschema's by_relevance key, larger is more relevant: shallower errors, then
// errors that are not anyOf/oneOf, then those whose schema's type the instance does not match.
func relevance(f schemaFault) [3]int {
	b := func(x bool) int {
		if x {
			return 1
		}
		return 0
	}
	return [3]int{-f.path, b(f.validator != "anyOf" && f.validator != "oneOf"), b(f.typeMismatch)}
}

func less(a, b [3]int) bool { return slices.Compare(a[:], b[:]) < 0 }

// bestMatch is jsonschema.exceptions.best_match: the most relevant error (the first of equals),
// then down its context to the least relevant branch error (heapq.nsmallest), unless the two
// least relevant tie.
func bestMatch(errs []schemaFault) (schemaFault, bool) {
	if len(errs) == 0 {
		return schemaFault{}, false
	}
	best := errs[0]
	for _, e := range errs[1:] {
		if less(relevance(best), relevance(e)) {
			best = e
		}
	}
	for len(best.context) > 0 {
		ctx := slices.Clone(best.context)
		slices.SortStableFunc(ctx, func(a, b schemaFault) int {
			ra, rb := relevance(a), relevance(b)
			return slices.Compare(ra[:], rb[:])
		})
		if len(ctx) >= 2 && relevance(ctx[0]) == relevance(ctx[1]) {
			return best, true
		}
		best = ctx[0]
	}
	return best, true
}

// ironicSchemaError is Ironic's args.schema failure text for the value named name: jsonschema's
// best match, and the root cause found down its context.
func ironicSchemaError(name string, errs []schemaFault) (string, bool) {
	if len(errs) == 0 {
		return "", false
	}
	top, _ := bestMatch(errs)
	msg := fmt.Sprintf("Schema error for %s: %s", name, top.message)
	// Ironic words the error best_match returns, then walks that error's context with
	// best_match for "a possible root cause".
	cur := top
	cause := ""
	for len(cur.context) > 0 {
		cur, _ = bestMatch(cur.context)
		cause = cur.message
	}
	if cause != "" {
		msg += ". Possible root cause: " + cause
	}
	return msg, true
}
