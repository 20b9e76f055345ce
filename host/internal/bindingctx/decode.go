package bindingctx

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// decodeStream reads a document the index declined, whole, with encoding/json's streaming
// decoder: its errors are the contract's, and the rare document the index declines without one
// (nested deeper than the scanner goes) is decoded as it was before the index.
func decodeStream(r io.Reader) (*Document, error) {
	contexts, err := decodeGeneric(r)
	if err != nil {
		return nil, err
	}
	doc := &Document{Contexts: make([]Context, 0, len(contexts))}
	for _, g := range contexts {
		doc.Contexts = append(doc.Contexts, fromGeneric(g))
	}
	return doc, nil
}

// decodeGeneric is the reference decoding of a document: every context as generic JSON, the
// objects without metadata.managedFields. The index and List give the same answers
// (TestIndexMatchesEncodingJSON, FuzzScanMatchesEncodingJSON).
func decodeGeneric(r io.Reader) ([]map[string]any, error) {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	fail := func(err error) ([]map[string]any, error) {
		return nil, errorf("failed to parse binding context: %v", err)
	}
	tok, err := dec.Token()
	if err == io.EOF {
		return nil, nil // empty or blank
	}
	if err != nil {
		return fail(err)
	}
	if tok != json.Delim('[') {
		// Still a syntax error, if there is one, before the shape.
		if _, err := valueFrom(dec, tok); err != nil {
			return fail(err)
		}
		return fail(errors.New("Shell-operator binding context must be a list"))
	}
	var out []map[string]any
	for i := 0; dec.More(); i++ {
		tok, err := dec.Token()
		if err != nil {
			return fail(err)
		}
		if tok != json.Delim('{') {
			if _, err := valueFrom(dec, tok); err != nil {
				return fail(err)
			}
			return fail(fmt.Errorf("item %d is not an object", i))
		}
		c, err := decodeContext(dec)
		if err != nil {
			return fail(err)
		}
		out = append(out, c)
	}
	if _, err := dec.Token(); err != nil {
		return fail(err)
	}
	if dec.More() {
		return fail(errors.New("unexpected data after the top-level value"))
	}
	if _, err := dec.Token(); err != io.EOF {
		if err == nil {
			err = errors.New("unexpected data after the top-level value")
		}
		return fail(err)
	}
	if out == nil {
		out = []map[string]any{}
	}
	return out, nil
}

// decodeContext decodes one context after its opening brace, the objects of its snapshots and
// Synchronization lists one by one.
func decodeContext(dec *json.Decoder) (map[string]any, error) {
	c := map[string]any{}
	err := members(dec, func(key string) (err error) {
		switch key {
		case "snapshots":
			c[key], err = decodeSnapshots(dec)
		case "objects":
			c[key], err = decodeItems(dec)
		case "object":
			c[key], err = decodeObject(dec, 1)
		default:
			c[key], err = decodeAny(dec)
		}
		return err
	})
	return c, err
}

// decodeSnapshots decodes {"binding": [items]}, or whatever other value is there for the planner
// to refuse by name.
func decodeSnapshots(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return valueOrErr(dec, tok, err)
	}
	snaps := map[string]any{}
	err = members(dec, func(name string) (err error) {
		snaps[name], err = decodeItems(dec)
		return err
	})
	return snaps, err
}

// decodeItems decodes a list of snapshot items ({"object": CR, "filterResult": ...} or the CR
// itself) one item at a time, or whatever other value is there.
func decodeItems(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('[') {
		return valueOrErr(dec, tok, err)
	}
	return elements(dec, func() (any, error) { return decodeObject(dec, 0) })
}

// decodeObject decodes an object whose metadata.managedFields is read past, never built: a
// snapshot item (depth 0), whose "object" member is the CR it wraps (depth 1), or a CR itself.
// Any other shape is decoded as it is, for the planner and resource to judge.
func decodeObject(dec *json.Decoder, depth int) (any, error) {
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return valueOrErr(dec, tok, err)
	}
	m := map[string]any{}
	err = members(dec, func(key string) (err error) {
		switch {
		case key == "metadata":
			m[key], err = decodeMetadata(dec)
		case key == "object" && depth == 0:
			m[key], err = decodeObject(dec, 1)
		default:
			m[key], err = decodeAny(dec)
		}
		return err
	})
	return m, err
}

// decodeMetadata decodes an object's metadata without its managedFields.
func decodeMetadata(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return valueOrErr(dec, tok, err)
	}
	md := map[string]any{}
	err = members(dec, func(key string) (err error) {
		if key == "managedFields" {
			var skip json.RawMessage
			return dec.Decode(&skip)
		}
		md[key], err = decodeAny(dec)
		return err
	})
	return md, err
}

// members reads an object's members up to and including its closing brace; member reads the
// value of each.
func members(dec *json.Decoder, member func(key string) error) error {
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		if err := member(key); err != nil {
			return err
		}
	}
	_, err := dec.Token()
	return err
}

// elements reads a list's elements up to and including its closing bracket.
func elements(dec *json.Decoder, element func() (any, error)) ([]any, error) {
	l := []any{}
	for dec.More() {
		v, err := element()
		if err != nil {
			return nil, err
		}
		l = append(l, v)
	}
	_, err := dec.Token()
	return l, err
}

func decodeAny(dec *json.Decoder) (any, error) {
	var v any
	err := dec.Decode(&v)
	return v, err
}

func valueOrErr(dec *json.Decoder, tok json.Token, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return valueFrom(dec, tok)
}

// valueFrom decodes the rest of a value whose first token was already read.
func valueFrom(dec *json.Decoder, tok json.Token) (any, error) {
	switch tok {
	case json.Delim('{'):
		m := map[string]any{}
		err := members(dec, func(key string) (err error) {
			m[key], err = decodeAny(dec)
			return err
		})
		return m, err
	case json.Delim('['):
		return elements(dec, func() (any, error) { return decodeAny(dec) })
	}
	return tok, nil
}

// decodedContext is a context of a document decoded whole.
type decodedContext struct {
	// object is the event's CR: the "object" member, else "filterResult".
	object any
	// objects is the "objects" member; snapshots the "snapshots" member when it is an object.
	objects   any
	snapshots map[string]any
}

func fromGeneric(g map[string]any) Context {
	str := func(key string) string {
		s, _ := g[key].(string)
		return s
	}
	d := &decodedContext{objects: g["objects"]}
	d.snapshots, _ = g["snapshots"].(map[string]any)
	if o, ok := g["object"]; ok {
		d.object = o
	} else {
		d.object = withoutManagedFields(g["filterResult"])
	}
	return Context{binding: str("binding"), typ: str("type"), watchEvent: str("watchEvent"), decoded: d}
}

// unwrap turns snapshot items ({"object": CR, "filterResult": ...}) into CRs: the "object"
// member, else the "filterResult" member (a jqFilter without the whole object), else the item
// itself.
func unwrap(items []any) []any {
	out := make([]any, len(items))
	for i, it := range items {
		out[i] = it
		m, ok := it.(map[string]any)
		if !ok {
			continue
		}
		if o, ok := m["object"]; ok {
			out[i] = o
		} else if f, ok := m["filterResult"]; ok {
			out[i] = withoutManagedFields(f)
		}
	}
	return out
}

// withoutManagedFields is the CR v without metadata.managedFields, as a CR is read everywhere
// else (decodeGeneric decodes a filter's result whole).
func withoutManagedFields(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	md, ok := m["metadata"].(map[string]any)
	if !ok {
		return v
	}
	if _, ok := md["managedFields"]; !ok {
		return v
	}
	out := make(map[string]any, len(m))
	for k, x := range m {
		out[k] = x
	}
	kept := make(map[string]any, len(md))
	for k, x := range md {
		if k != "managedFields" {
			kept[k] = x
		}
	}
	out["metadata"] = kept
	return out
}
