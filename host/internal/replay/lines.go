package replay

import (
	"context"
	"encoding/binary"
	"log/slog"
	"sync"

	"github.com/openstack-sync/openstack-sync/host/internal/modulecache"
)

// Lines records the warnings a run's host lines carry (a CR's notes: drift OpenStack will not let
// the plugin fix), which a replay of the run repeats, and whether any line was an error (such a
// run is never recorded). It wraps the run's handler and passes every line on.
type Lines struct {
	mu     sync.Mutex
	lines  [][]byte
	bytes  int
	errors int
	over   bool
}

// A recorded line is its level, its message and its attributes as text, each length-prefixed
// (uvarints): a run of 20,000 CRs with notes repeats 20,000 of them, so reading one back must cost
// no JSON decode.

// maxLineBytes bounds what a record keeps of a run's lines: a converged CR with notes logs one
// line every run, and 20,000 such CRs are some 10 MB of them.
const maxLineBytes = 16 << 20

// Wrap returns a logger that writes through log and records into l.
func (l *Lines) Wrap(log *slog.Logger) *slog.Logger {
	return slog.New(&lineHandler{next: log.Handler(), l: l})
}

// Spoiled says why the lines keep the run from being recorded; "" when they do not.
func (l *Lines) Spoiled() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.errors > 0:
		return "the run logged an error"
	case l.over:
		return "the run logged too many warnings to record"
	}
	return ""
}

// Recorded are the lines to repeat, each encoded as the record keeps it.
func (l *Lines) Recorded() [][]byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lines
}

// Repeat writes the recorded lines to log, at their level, with their attributes and
// replayed=true.
func Repeat(ctx context.Context, log *slog.Logger, lines [][]byte) {
	var attrs []slog.Attr
	for _, raw := range lines {
		d := lineDecoder{b: raw}
		level := slog.Level(int64(d.uvarint()) - 8)
		msg := d.text()
		attrs = attrs[:0]
		for n := d.uvarint(); n > 0 && d.ok(); n-- {
			k := d.text()
			attrs = append(attrs, slog.String(k, d.text()))
		}
		if !d.ok() || !log.Enabled(ctx, level) {
			continue
		}
		attrs = append(attrs, slog.Bool("replayed", true))
		log.LogAttrs(ctx, level, msg, attrs...)
	}
}

type lineDecoder struct {
	b   []byte
	bad bool
}

func (d *lineDecoder) ok() bool { return !d.bad }

func (d *lineDecoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *lineDecoder) text() string {
	n := d.uvarint()
	if d.bad || n > uint64(len(d.b)) {
		d.bad = true
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

type lineHandler struct {
	next  slog.Handler
	l     *Lines
	attrs []slog.Attr
}

func (h *lineHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return level >= slog.LevelWarn || h.next.Enabled(ctx, level)
}

func (h *lineHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		h.l.add(h.attrs, r)
	}
	if !h.next.Enabled(ctx, r.Level) {
		return nil
	}
	return h.next.Handle(ctx, r)
}

func (h *lineHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &lineHandler{next: h.next.WithAttrs(attrs), l: h.l, attrs: append(append([]slog.Attr(nil), h.attrs...), attrs...)}
}

func (h *lineHandler) WithGroup(name string) slog.Handler {
	// The runner names no groups; a line under one is kept without it.
	return &lineHandler{next: h.next.WithGroup(name), l: h.l, attrs: h.attrs}
}

func (l *Lines) add(with []slog.Attr, r slog.Record) {
	// The plugin is named by the replay's own logger; the other attributes keep their order.
	n := 0
	var body []byte
	put := func(a slog.Attr) bool {
		if a.Key != "plugin" {
			body = appendText(appendText(body, a.Key), a.Value.Resolve().String())
			n++
		}
		return true
	}
	for _, a := range with {
		put(a)
	}
	r.Attrs(put)
	raw := binary.AppendUvarint(nil, uint64(int64(r.Level)+8))
	raw = appendText(raw, r.Message)
	raw = append(binary.AppendUvarint(raw, uint64(n)), body...)
	l.mu.Lock()
	defer l.mu.Unlock()
	if r.Level >= slog.LevelError {
		l.errors++
		return
	}
	if l.bytes += len(raw); l.bytes > maxLineBytes || len(l.lines) >= modulecache.MaxReplayLines {
		l.over = true
		return
	}
	l.lines = append(l.lines, raw)
}

func appendText(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}
