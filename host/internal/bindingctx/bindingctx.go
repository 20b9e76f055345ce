// Package bindingctx reads the binding contexts shell-operator hands a hook run (docs/contract.md §1.4, §1.5)
// and finds the object lists the planner works from.
//
// A run needs one CR at a time, never the document whole: shell-operator writes every snapshot
// into every context of a batch (a Synchronization carries its objects twice), and the host plans
// from one snapshot per binding. So Read passes over the document once without decoding any
// object, keeping each context's binding, type and watch event and where its objects lie; a List
// then decodes its CRs one at a time, as the planner reads them (docs/scaling.md). Objects stay
// generic JSON: one malformed CR must not make the whole batch unreadable, so the typed reading
// happens later, one CR at a time.
package bindingctx

import (
	"bufio"
	"bytes"
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

// Context is one binding context: the members the framework reads. Its objects are decoded when
// asked for.
type Context struct {
	binding, typ, watchEvent string
	// object is where an Event's CR lies: its "object" member, else its "filterResult".
	object *span
	// objects is a Synchronization's object list; snapshots the lists by binding name (nil when
	// the context has no snapshots object).
	objects   *list
	snapshots map[string]*list
	// decoded holds the context's objects when the document was decoded whole (see Read).
	decoded *decodedContext
	doc     *Document
}

// Document is a read binding-context file. Its Contexts decode their objects from it, so it must
// stay open while they are in use.
type Document struct {
	Contexts []Context
	src      source
	closer   io.Closer
}

// Close releases the file; the Contexts can no longer decode objects after it.
func (d *Document) Close() error {
	if d == nil || d.closer == nil {
		return nil
	}
	return d.closer.Close()
}

// Error is a binding context that cannot be planned; the run exits 1.
type Error struct{ msg string }

func (e *Error) Error() string { return e.msg }

func errorf(format string, args ...any) error { return &Error{msg: fmt.Sprintf(format, args...)} }

// Read indexes the contexts at path. An empty path or a blank file means no contexts. The file
// is read through a buffer and kept open for the objects (Document.Close).
func Read(path string) (*Document, error) {
	if path == "" {
		return &Document{}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, errorf("failed to read binding context: %v", err)
	}
	const bufSize = 64 << 10
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		d := &indexer{scanner{r: f, buf: make([]byte, 0, bufSize), keys: map[string]string{}}}
		if contexts, ok := d.index(); ok {
			return newDocument(contexts, f, f), nil
		}
		// Anything the index declines (a syntax error above all) is read again by encoding/json,
		// whose answer and error text are the contract's.
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			f.Close()
			return nil, errorf("failed to read binding context: %v", err)
		}
	}
	defer f.Close()
	return decodeStream(bufio.NewReaderSize(f, bufSize))
}

// Parse indexes a binding-context document in memory.
func Parse(data []byte) (*Document, error) {
	d := &indexer{scanner{buf: data, done: true, keys: map[string]string{}}}
	if contexts, ok := d.index(); ok {
		return newDocument(contexts, bytes.NewReader(data), nil), nil
	}
	return decodeStream(bytes.NewReader(data))
}

func newDocument(contexts []Context, src source, closer io.Closer) *Document {
	doc := &Document{Contexts: contexts, src: src, closer: closer}
	for i := range doc.Contexts {
		doc.Contexts[i].doc = doc
	}
	return doc
}

// Binding is the binding name; "periodic sync" for the schedule.
func (c Context) Binding() string { return c.binding }

// Type is Synchronization, Event, Schedule, Group or anything else shell-operator sends.
func (c Context) Type() string { return c.typ }

// WatchEvent is Added, Modified or Deleted on Event contexts.
func (c Context) WatchEvent() string { return c.watchEvent }

// NewContext is a context of the given binding and type carrying the snapshots of from: a run
// that replaces its batch with a full pass (a lease takeover) plans from it.
func NewContext(binding, typ string, from Context) Context {
	c := Context{binding: binding, typ: typ, snapshots: from.snapshots, doc: from.doc}
	if from.decoded != nil {
		c.decoded = &decodedContext{snapshots: from.decoded.snapshots}
	}
	return c
}

// HasSnapshot reports whether c carries a snapshot of the binding (whatever its shape).
func (c Context) HasSnapshot(binding string) bool {
	if c.decoded != nil {
		_, ok := c.decoded.snapshots[binding]
		return ok && c.decoded.snapshots != nil
	}
	_, ok := c.snapshots[binding]
	return ok
}

// Object is the event's CR, decoded; nil when absent, null or empty.
func (c Context) Object() (any, error) {
	var o any
	switch {
	case c.decoded != nil:
		o = c.decoded.object
	case c.object != nil:
		var err error
		if o, err = c.doc.decode(*c.object, newScanner(nil)); err != nil {
			return nil, err
		}
	}
	if m, ok := o.(map[string]any); ok && len(m) == 0 {
		return nil, nil
	}
	return o, nil
}

// IsEventOf reports whether c is an Event context of the binding.
func (c Context) IsEventOf(binding string) bool {
	return c.Binding() == binding && c.Type() == TypeEvent
}

// List is one list of CRs: a snapshot, or a Synchronization's objects. Each reads its CRs from the
// document one at a time.
type List struct {
	doc     *Document
	items   []span
	decoded []any
}

// Len is the number of CRs.
func (l *List) Len() int {
	if l == nil {
		return 0
	}
	if l.doc == nil {
		return len(l.decoded)
	}
	return len(l.items)
}

// Each calls fn with each CR in turn, decoded; the CR is fn's until it returns, and nothing of it
// is kept. An error is the document's (it could not be read again).
func (l *List) Each(fn func(obj any)) error {
	return l.each(func(o any) bool { fn(o); return true })
}

// each is Each until fn answers false.
func (l *List) each(fn func(obj any) bool) error {
	if l == nil {
		return nil
	}
	if l.doc == nil {
		for _, o := range l.decoded {
			if !fn(o) {
				return nil
			}
		}
		return nil
	}
	d := newScanner(nil)
	for _, it := range l.items {
		o, err := l.doc.decode(it, d)
		if err != nil {
			return err
		}
		if !fn(o) {
			return nil
		}
	}
	return nil
}

// All decodes every CR of the list at once; for tests and small lists.
func (l *List) All() ([]any, error) {
	out := make([]any, 0, l.Len())
	err := l.Each(func(o any) { out = append(out, o) })
	return out, err
}

// newScanner is a scanner over bytes that are read whole; its shared strings last while it is
// reused, which is for the CRs of one list.
func newScanner(buf []byte) *scanner {
	return &scanner{buf: buf, done: true, keys: map[string]string{}}
}

// decode reads the CR at s with d, whose buffer it reuses.
func (doc *Document) decode(s span, d *scanner) (any, error) {
	n := int(s.end - s.start)
	if cap(d.buf) < n {
		d.buf = make([]byte, n)
	}
	d.buf, d.i, d.base = d.buf[:n], 0, s.start
	if _, err := doc.src.ReadAt(d.buf, s.start); err != nil && !(errors.Is(err, io.EOF) && n > 0) {
		return nil, errorf("failed to read binding context: %v", err)
	}
	v, ok := d.value(modeCR, 1)
	if !ok {
		// The index read these bytes without a fault: the file changed under the run.
		return nil, errorf("failed to read binding context: the file changed while it was read")
	}
	return v, nil
}

// snapshot returns the binding's snapshot and whether this context carries one.
func (c Context) snapshot(binding string) (*List, bool, error) {
	if c.decoded != nil {
		v, ok := c.decoded.snapshots[binding]
		if !ok {
			return nil, false, nil
		}
		l, ok := v.([]any)
		if !ok {
			return nil, true, errorf("Snapshot %s must be a list", binding)
		}
		return &List{decoded: unwrap(l)}, true, nil
	}
	l, ok := c.snapshots[binding]
	if !ok {
		return nil, false, nil
	}
	if l.items == nil {
		return nil, true, errorf("Snapshot %s must be a list", binding)
	}
	return &List{doc: c.doc, items: l.items}, true, nil
}

// syncObjects returns a Synchronization context's objects.
func (c Context) syncObjects() (*List, error) {
	if c.decoded != nil {
		v := c.decoded.objects
		if v == nil {
			return nil, nil
		}
		l, ok := v.([]any)
		if !ok {
			return nil, errorf("Synchronization %s objects must be a list", c.Binding())
		}
		return &List{decoded: unwrap(l)}, nil
	}
	l := c.objects
	if l == nil || (l.items == nil && l.value.first == 'n') {
		return nil, nil
	}
	if l.items == nil {
		return nil, errorf("Synchronization %s objects must be a list", c.Binding())
	}
	return &List{doc: c.doc, items: l.items}, nil
}

// EventSnapshot is the snapshot of an event run: the last of the binding's Event contexts that
// carries the binding's snapshot (an empty list is valid).
func EventSnapshot(contexts []Context, binding string) (*List, error) {
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
func FullSnapshot(contexts []Context, binding string) (*List, error) {
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
// before the plugin is even loaded; an object it cannot read counts as a match, and so does a
// document that cannot be read again.
func AnySyncStatus(contexts []Context, want string) bool {
	found := false
	match := func(o any) bool {
		m, ok := o.(map[string]any)
		st, _ := m["status"].(map[string]any)
		found = !ok || (st != nil && st["syncStatus"] == want)
		return !found
	}
	for _, c := range contexts {
		var lists []*List
		if c.decoded != nil {
			for _, v := range c.decoded.snapshots {
				l, ok := v.([]any)
				if !ok {
					return true
				}
				lists = append(lists, &List{decoded: unwrap(l)})
			}
		} else {
			for _, l := range c.snapshots {
				if l.items == nil {
					return true
				}
				lists = append(lists, &List{doc: c.doc, items: l.items})
			}
		}
		for _, l := range lists {
			if err := l.each(match); err != nil || found {
				return true
			}
		}
	}
	return false
}
