package wasm

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/modulecache"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm/admission"
)

// recordingWatch keeps every bracket a plugin opens and closes.
type recordingWatch struct {
	mu    sync.Mutex
	calls []WatchedCall
	open  map[uint64]bool
	ended []uint64
}

func (w *recordingWatch) Begin(c WatchedCall) uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls = append(w.calls, c)
	id := uint64(len(w.calls))
	if w.open == nil {
		w.open = map[uint64]bool{}
	}
	w.open[id] = true
	return id
}

func (w *recordingWatch) End(id uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.open, id)
	w.ended = append(w.ended, id)
}

// Every stretch of guest code (the runtime's start included) is bracketed for the supervisor,
// with the deadline the call runs under and the CR it serves, and every bracket is closed,
// failures included.
func TestWatchSeesEveryGuestEntry(t *testing.T) {
	cases := []struct {
		name   string
		spec   map[string]any
		failed bool
	}{
		{name: "a reconcile that succeeds", spec: map[string]any{"action": "echo", "name": "a"}},
		{name: "a reconcile that panics", spec: map[string]any{"action": "panic"}, failed: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := &recordingWatch{}
			o, logs := testOptions(t)
			o.Watch = w
			o.CallTimeout = 20 * time.Second
			// Without its metadata record the load asks the guest, so the metadata call is
			// bracketed too (a record answers it without guest code).
			record, err := recordFile(o.CacheDir, guest(t, "pdkmock"))
			require.NoError(t, err)
			if err := os.Remove(record); !errors.Is(err, fs.ErrNotExist) {
				require.NoError(t, err)
			}
			p := loadTest(t, guest(t, "pdkmock"), o)
			start := time.Now()
			_, err = p.Reconcile(context.Background(), &fakeSession{}, nil, crRequest("a", c.spec))
			assert.Equal(t, c.failed, err != nil, "reconcile error: %v", err)

			w.mu.Lock()
			defer w.mu.Unlock()
			var entries, plugins []string
			for _, call := range w.calls {
				entries = append(entries, call.Entry)
				plugins = append(plugins, call.Plugin)
			}
			// A reconcile without a group cache opens and closes the group around it.
			want := []string{"_initialize", "metadata", "group_begin", "reconcile", "group_end"}
			if c.failed {
				// The failed instance is discarded with its group: no group_end on it.
				want = want[:4]
			}
			assert.Equal(t, want, entries)
			assert.Equal(t, []string{"pdkmock", "pdkmock", "mock", "mock", "mock"}[:len(want)], plugins,
				"named by the file until the module names itself")
			last := w.calls[3]
			assert.Equal(t, "ns/a", last.Object)
			assert.WithinDuration(t, start.Add(20*time.Second), last.Deadline, 5*time.Second)
			assert.GreaterOrEqual(t, w.calls[0].Deadline.Sub(start), minStartTimeout-time.Second,
				"an instance start gets at least minStartTimeout")
			assert.Empty(t, w.open, "every bracket is closed")
			assert.Contains(t, logs.String(), "termination_checks=false watched=true")
		})
	}
}

// A watched module that overran before keeps the checks on: its runaway loop is stopped at the
// deadline in-process, as without a watcher. Without the marker the same loop would hold this
// test's process forever, which is why only the supervisor's tests run it.
func TestAnOverrunMarkerTurnsTheChecksBackOn(t *testing.T) {
	o, logs := testOptions(t)
	o.CacheDir = t.TempDir()
	o.Watch = &recordingWatch{}
	path := guest(t, "pdkmock")
	marker, err := MarkOverrun(path, o, Overrun{Plugin: "mock", Entry: "reconcile", Object: "ns/a", Timeout: "300ms",
		Time: time.Now()})
	require.NoError(t, err)
	digest, _, err := admission.HashModule(path)
	require.NoError(t, err)
	raw, err := modulecache.Dir(o.CacheDir).Read(modulecache.Overrun, digest.String(), digest)
	require.NoError(t, err)
	assert.Equal(t, modulecache.Dir(o.CacheDir).Path(modulecache.Overrun, digest.String()), marker)
	var rec Overrun
	require.NoError(t, json.Unmarshal(raw, &rec))
	assert.Equal(t, "reconcile", rec.Entry)

	// Another module's marker copied under this one's name still says the module may loop.
	other, err := modulecache.ParseDigest(strings.Repeat("ab", 32))
	require.NoError(t, err)
	require.NoError(t, modulecache.Dir(o.CacheDir).Write(modulecache.Overrun, digest.String(), other, []byte("{}")))
	p := loadTest(t, path, o)
	assert.Contains(t, logs.String(), "its overrun marker cannot be read or checked")
	require.NoError(t, p.Close(context.Background()))
	_, err = MarkOverrun(path, o, Overrun{Plugin: "mock"})
	require.NoError(t, err)

	p = loadTest(t, path, o)
	assert.Contains(t, logs.String(), "termination checks on for this module")
	assert.Contains(t, logs.String(), "termination_checks=true watched=true")
	ctx := context.Background()
	cache, err := p.NewCache(ctx)
	require.NoError(t, err)
	defer cache.Close(ctx)
	p.opts.CallTimeout = 300 * time.Millisecond
	_, err = p.Reconcile(ctx, &fakeSession{}, cache, crRequest("bad", map[string]any{"action": "loop"}))
	var ce *CallError
	require.True(t, errors.As(err, &ce), "want a *CallError, got %v", err)
	assert.Equal(t, "timeout", ce.Kind)
}

func TestMarkOverrunNeedsACacheDirectory(t *testing.T) {
	o, _ := testOptions(t)
	o.NoCache = true
	_, err := MarkOverrun(guest(t, "pdkmock"), o, Overrun{})
	assert.ErrorContains(t, err, "no compilation cache directory")
}

// OPENSTACK_SYNC_CACHE_DIR=off is no directory for the marker either: before, the hook wrote
// ./off/overrun/… in its working directory.
func TestMarkOverrunWithTheCacheOffWritesNothing(t *testing.T) {
	o, _ := testOptions(t, CacheDirEnv+"="+CacheOff)
	o.CacheDir = ""
	path := guest(t, "pdkmock")
	t.Chdir(t.TempDir())
	_, err := MarkOverrun(path, o, Overrun{})
	assert.ErrorContains(t, err, "no compilation cache directory")
	_, statErr := os.Stat(CacheOff)
	assert.True(t, os.IsNotExist(statErr), "no %q folder in the working directory", CacheOff)
}
