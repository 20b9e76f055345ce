package replay

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"slices"
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

// line is one recorded line.
type line struct {
	Level slog.Level     `json:"level"`
	Msg   string         `json:"msg"`
	Attrs map[string]any `json:"attrs,omitempty"`
}

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

// Repeat writes the recorded lines to log, at their level, with their attributes.
func Repeat(ctx context.Context, log *slog.Logger, lines [][]byte) {
	for _, raw := range lines {
		var ln line
		if json.Unmarshal(raw, &ln) != nil {
			continue
		}
		args := make([]any, 0, 2*len(ln.Attrs)+2)
		for _, k := range slices.Sorted(maps.Keys(ln.Attrs)) {
			args = append(args, k, ln.Attrs[k])
		}
		args = append(args, "replayed", true)
		log.Log(ctx, ln.Level, ln.Msg, args...)
	}
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
	ln := line{Level: r.Level, Msg: r.Message, Attrs: map[string]any{}}
	put := func(a slog.Attr) bool {
		// The plugin is named by the replay's own logger.
		if a.Key != "plugin" {
			ln.Attrs[a.Key] = a.Value.Resolve().String()
		}
		return true
	}
	for _, a := range with {
		put(a)
	}
	r.Attrs(put)
	raw, _ := json.Marshal(ln)
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
