package bindingctx

import "io"

// span is where a JSON value lies in the document: bytes [start, end), and its first byte.
type span struct {
	start, end int64
	first      byte
}

// list is a JSON list of snapshot items (or of Synchronization objects) as the index found it:
// where each item's CR lies. items is nil when the value is not a list.
type list struct {
	value span
	items []span
}

// indexer is the first pass over a document: it reads every byte once through the scanner's
// buffer, checks the syntax as the decoding would, and keeps only each context's small members
// and where its objects lie. No object is decoded; List decodes one CR at a time afterwards. It
// declines what the scanner declines, so a document with a syntax error goes to encoding/json
// whole, whose error text is the contract's.
type indexer struct {
	scanner
}

// index reads the document and returns its contexts; false where the decoding must be
// encoding/json's.
func (d *indexer) index() ([]Context, bool) {
	c, ok := d.next()
	if !ok {
		return nil, !d.failed // empty or blank
	}
	if c != '[' {
		return nil, false
	}
	d.i++
	out := []Context{}
	if c, ok = d.next(); !ok {
		return nil, false
	}
	if c == ']' {
		d.i++
	} else {
		for {
			if c != '{' {
				return nil, false
			}
			ctx, ok := d.context()
			if !ok {
				return nil, false
			}
			out = append(out, ctx)
			if c, ok = d.next(); !ok {
				return nil, false
			}
			d.i++
			if c == ']' {
				break
			}
			if c != ',' {
				return nil, false
			}
			if c, ok = d.next(); !ok {
				return nil, false
			}
		}
	}
	if _, ok := d.next(); ok || d.failed {
		return nil, false // data after the list, or a read error
	}
	return out, true
}

// pos is the document offset of the read position.
func (d *indexer) pos() int64 { return d.base + int64(d.i) }

// members reads an object whose opening brace is at the read position, calling member with each
// member name and the read position at its value, which member must read past.
func (d *indexer) members(member func(key string) bool) bool {
	d.i++
	c, ok := d.next()
	if !ok {
		return false
	}
	if c == '}' {
		d.i++
		return true
	}
	for {
		if c != '"' {
			return false
		}
		key, ok := d.str(strKey)
		if !ok {
			return false
		}
		if c, ok = d.next(); !ok || c != ':' {
			return false
		}
		d.i++
		if _, ok := d.next(); !ok || !member(key) {
			return false
		}
		if c, ok = d.next(); !ok {
			return false
		}
		d.i++
		switch c {
		case ',':
			if c, ok = d.next(); !ok {
				return false
			}
		case '}':
			return true
		default:
			return false
		}
	}
}

// skipSpan reads past a value and returns where it lies.
func (d *indexer) skipSpan(depth int) (span, bool) {
	c, _ := d.next()
	s := span{start: d.pos(), first: c}
	if !d.skip(depth) {
		return s, false
	}
	s.end = d.pos()
	return s, true
}

// text reads a member that the contexts keep when it is a string ("" otherwise, as Binding and
// the others answer for any other value).
func (d *indexer) text(depth int) (string, bool) {
	if c, _ := d.next(); c == '"' {
		return d.str(strValue)
	}
	return "", d.skip(depth)
}

// context reads one binding context: the members the planner reads, the rest read past.
func (d *indexer) context() (Context, bool) {
	var c Context
	var object, filter *span
	const depth = 2
	ok := d.members(func(key string) bool {
		var ok bool
		switch key {
		case "binding":
			c.binding, ok = d.text(depth)
		case "type":
			c.typ, ok = d.text(depth)
		case "watchEvent":
			c.watchEvent, ok = d.text(depth)
		case "object", "filterResult":
			var s span
			if s, ok = d.skipSpan(depth); ok {
				if key == "object" {
					object = &s
				} else {
					filter = &s
				}
			}
		case "objects":
			var l *list
			if l, ok = d.list(depth); ok {
				c.objects = l
			}
		case "snapshots":
			c.snapshots = nil
			if first, _ := d.next(); first != '{' {
				return d.skip(depth)
			}
			snaps := map[string]*list{}
			ok = d.members(func(name string) bool {
				l, ok := d.list(depth + 1)
				snaps[name] = l
				return ok
			})
			c.snapshots = snaps
		default:
			ok = d.skip(depth)
		}
		return ok
	})
	// The event's CR: the object, else the filter's result (keepFullObjectsInMemory: false).
	switch {
	case object != nil:
		c.object = object
	case filter != nil:
		c.object = filter
	}
	return c, ok
}

// list reads a value that should be a list of snapshot items and records where each item's CR
// lies: its "object" member, else its "filterResult" member (the host's own jqFilter, without the
// whole object), else the item itself.
func (d *indexer) list(depth int) (*list, bool) {
	c, _ := d.next()
	if c != '[' {
		s, ok := d.skipSpan(depth)
		return &list{value: s}, ok
	}
	l := &list{value: span{start: d.pos(), first: '['}, items: []span{}}
	d.i++
	if c, ok := d.next(); !ok {
		return nil, false
	} else if c == ']' {
		d.i++
		l.value.end = d.pos()
		return l, true
	}
	for {
		cr, ok := d.item(depth + 1)
		if !ok {
			return nil, false
		}
		l.items = append(l.items, cr)
		c, ok := d.next()
		if !ok {
			return nil, false
		}
		d.i++
		switch c {
		case ',':
		case ']':
			l.value.end = d.pos()
			return l, true
		default:
			return nil, false
		}
	}
}

// item reads one list element and returns where its CR lies.
func (d *indexer) item(depth int) (span, bool) {
	c, ok := d.next()
	if !ok || depth > maxScanDepth {
		return span{}, false
	}
	if c != '{' {
		return d.skipSpan(depth)
	}
	whole := span{start: d.pos(), first: '{'}
	var object, filter *span
	ok = d.members(func(key string) bool {
		if key != "object" && key != "filterResult" {
			return d.skip(depth + 1)
		}
		s, ok := d.skipSpan(depth + 1)
		if key == "object" {
			object = &s
		} else {
			filter = &s
		}
		return ok
	})
	whole.end = d.pos()
	switch {
	case object != nil:
		return *object, ok
	case filter != nil:
		return *filter, ok
	}
	return whole, ok
}

// source is where a document's bytes are read again from for the second pass: the file, or the
// bytes Parse was given.
type source interface {
	io.ReaderAt
}
