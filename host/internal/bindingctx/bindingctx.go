// Package bindingctx reads the binding contexts shell-operator hands a hook run (docs/contract.md §1.4, §1.5)
// and finds the object lists the planner works from.
//
// Contexts stay generic JSON: one malformed CR must not make the whole batch unreadable, so the
// typed reading of objects happens later, one CR at a time.
package bindingctx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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

// Read loads the contexts at path. An empty path or a blank file means no contexts.
func Read(path string) ([]Context, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, errorf("failed to read binding context: %v", err)
	}
	return Parse(data)
}

// Parse decodes a binding-context document.
func Parse(data []byte) ([]Context, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, errorf("failed to parse binding context: %v", err)
	}
	if dec.More() {
		return nil, errorf("failed to parse binding context: unexpected data after the top-level value")
	}
	items, ok := doc.([]any)
	if !ok {
		return nil, errorf("failed to parse binding context: Shell-operator binding context must be a list")
	}
	out := make([]Context, 0, len(items))
	for i, item := range items {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, errorf("failed to parse binding context: item %d is not an object", i)
		}
		out = append(out, Context(m))
	}
	return out, nil
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
