// Package bindingctx reads the binding contexts shell-operator hands a hook run (docs/contract.md §1.4, §1.5)
// and finds the object lists the planner works from.
//
// Contexts stay generic JSON: one malformed CR must not make the whole batch unreadable, so the
// typed reading of objects happens later, one CR at a time.
package bindingctx

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// Context types and watch events the framework acts on.
const (
	TypeSynchronization = "Synchronization"
	TypeEvent           = "Event"
	TypeSchedule        = "Schedule"

	Added    = "Added"
	Modified = "Modified"
	Deleted  = "Deleted"
)

// Context is one binding context, as decoded JSON (numbers kept as json.Number).
type Context map[string]any

// Error is a binding context that cannot be planned; the run exits 1.
type Error struct{ msg string }

func (e *Error) Error() string { return e.msg }

func errorf(format string, args ...any) error { return &Error{msg: fmt.Sprintf(format, args...)} }

// Read loads the contexts at path. An empty path or a blank file means no contexts. The file is
// decoded as it is read, never held whole (see Parse).
func Read(path string) ([]Context, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, errorf("failed to read binding context: %v", err)
	}
	defer f.Close()
	const bufSize = 64 << 10
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		if out, ok := scanDecode(f, bufSize); ok {
			return out, nil
		}
		// Anything scanDecode declines (a syntax error above all) is read again by encoding/json,
		// whose answer and error text are the contract's.
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, errorf("failed to read binding context: %v", err)
		}
	}
	return decodeStream(bufio.NewReaderSize(f, bufSize))
}

// Parse decodes a binding-context document.
//
// The snapshot objects are decoded one at a time, and metadata.managedFields is read past
// without being built: the API server's field-ownership records are most of an object's size
// (a converged CR of a few hundred bytes of spec carries several KiB of them, 30-45 KiB once
// decoded) and the framework never reads them, so a snapshot of 5,000 CRs held whole cost the
// hook hundreds of MiB. Everything else of every context is kept as decoded JSON (numbers as json.Number).
func Parse(data []byte) ([]Context, error) {
	if out, ok := scanBytes(data); ok {
		return out, nil
	}
	return decodeStream(bytes.NewReader(data))
}

// decodeStream is the reference decoding, with encoding/json's streaming decoder: scanDecode
// gives the same answer faster, and hands everything else (errors first) to it.
func decodeStream(r io.Reader) ([]Context, error) {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	fail := func(err error) ([]Context, error) {
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
	var out []Context
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
		out = []Context{}
	}
	return out, nil
}

// decodeContext decodes one context after its opening brace, the objects of its snapshots and
// Synchronization lists one by one.
func decodeContext(dec *json.Decoder) (Context, error) {
	c := Context{}
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

// str returns a string field, "" when absent or of another type.
func (c Context) str(key string) string {
	s, _ := c[key].(string)
	return s
}

// Binding is the binding name; "periodic sync" for the schedule.
func (c Context) Binding() string { return c.str("binding") }

// Type is Synchronization, Event, Schedule, Group or anything else shell-operator sends.
func (c Context) Type() string { return c.str("type") }

// WatchEvent is Added, Modified or Deleted on Event contexts.
func (c Context) WatchEvent() string { return c.str("watchEvent") }

// Object is the event's CR, nil when absent or empty.
func (c Context) Object() any {
	o := c["object"]
	if m, ok := o.(map[string]any); ok && len(m) == 0 {
		return nil
	}
	return o
}

// IsEventOf reports whether c is an Event context of the binding.
func (c Context) IsEventOf(binding string) bool {
	return c.Binding() == binding && c.Type() == TypeEvent
}

// snapshot returns the binding's snapshot items and whether this context carries one.
func (c Context) snapshot(binding string) ([]any, bool, error) {
	snaps, ok := c["snapshots"].(map[string]any)
	if !ok {
		return nil, false, nil
	}
	v, ok := snaps[binding]
	if !ok {
		return nil, false, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, true, errorf("Snapshot %s must be a list", binding)
	}
	return unwrap(list), true, nil
}

// syncObjects returns a Synchronization context's objects.
func (c Context) syncObjects() ([]any, error) {
	v, ok := c["objects"]
	if !ok || v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, errorf("Synchronization %s objects must be a list", c.Binding())
	}
	return unwrap(list), nil
}

// unwrap turns snapshot items ({"object": CR, "filterResult": ...}) into CRs; an item without an
// "object" key is the CR itself.
func unwrap(items []any) []any {
	out := make([]any, len(items))
	for i, it := range items {
		out[i] = it
		if m, ok := it.(map[string]any); ok {
			if o, ok := m["object"]; ok {
				out[i] = o
			}
		}
	}
	return out
}

// EventSnapshot is the snapshot of an event run: the last of the binding's Event contexts that
// carries the binding's snapshot (an empty list is valid).
func EventSnapshot(contexts []Context, binding string) ([]any, error) {
	for i := len(contexts) - 1; i >= 0; i-- {
		c := contexts[i]
		if !c.IsEventOf(binding) {
			continue
		}
		items, ok, err := c.snapshot(binding)
		if ok {
			return items, err
		}
	}
	return nil, errorf("Shell-operator %s event context does not contain %s snapshot objects", binding, binding)
}

// FullSnapshot is the object list of a non-event run: the first context (any binding or type)
// carrying the binding's snapshot, else the objects of the binding's first Synchronization.
func FullSnapshot(contexts []Context, binding string) ([]any, error) {
	for _, c := range contexts {
		items, ok, err := c.snapshot(binding)
		if ok {
			return items, err
		}
	}
	for _, c := range contexts {
		if c.Binding() == binding && c.Type() == TypeSynchronization {
			return c.syncObjects()
		}
	}
	return nil, errorf("Shell-operator binding context does not contain %s event, snapshot, or synchronization objects", binding)
}

// IsError reports whether err is a binding-context error.
func IsError(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

// OnlyBinding reports whether every context of the run belongs to binding (and there is one).
func OnlyBinding(contexts []Context, binding string) bool {
	for _, c := range contexts {
		if c.Binding() != binding {
			return false
		}
	}
	return len(contexts) > 0
}

// AnySyncStatus reports whether any object in any snapshot of the run has status.syncStatus
// equal to want. It reads nothing else, so it is cheap enough to decide whether a run has work
// before the plugin is even loaded; an object it cannot read counts as a match.
func AnySyncStatus(contexts []Context, want string) bool {
	for _, c := range contexts {
		snaps, _ := c["snapshots"].(map[string]any)
		for _, v := range snaps {
			list, ok := v.([]any)
			if !ok {
				return true
			}
			for _, o := range unwrap(list) {
				m, ok := o.(map[string]any)
				if !ok {
					return true
				}
				st, _ := m["status"].(map[string]any)
				if st != nil && st["syncStatus"] == want {
					return true
				}
			}
		}
	}
	return false
}
