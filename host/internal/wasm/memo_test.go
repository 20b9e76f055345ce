package wasm

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/memo"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm/wasmtest"
)

// memoRun is one hook run of the memo mock (wasmtest.HookRun) under options.
type memoRun struct {
	t       *testing.T
	load    func(o Options) plugin.Plugin
	options func() (Options, *logBuffer)
}

func (r memoRun) reconcile(cloud plugin.Session, req plugin.ReconcileRequest) (plugin.Result, error, bool) {
	return wasmtest.HookRun(r.t, func() (plugin.Plugin, *logBuffer) {
		o, logs := r.options()
		return r.load(o), logs
	}, cloud, req)
}

// The convergence memo through the module; host/internal/nativeplugin runs the same scenario
// through the native build, as the benchmark compares them.
func TestTheConvergenceMemo(t *testing.T) {
	path := guest(t, "nativemock")
	dir := t.TempDir()
	wasmtest.ConvergenceMemo(t, dir, func(env []string) (plugin.Plugin, *logBuffer) {
		o, logs := testOptions(t, env...)
		o.CacheDir, o.Memo = dir, true
		o.Environ = func() []string { return env }
		p, err := Load(context.Background(), path, o)
		require.NoError(t, err)
		return p, logs
	})
}

// A record older than the maximum age is not used: the age bounds how long evidence a plugin
// left incomplete could hide a change. "0" turns the memo off: no file, no hit.
func TestTheMemoAgesAndTurnsOff(t *testing.T) {
	path := guest(t, "nativemock")
	dir := t.TempDir()
	var maxAge time.Duration
	clock := time.Now()
	run := memoRun{t: t, load: func(o Options) plugin.Plugin {
		return loadTest(t, path, o)
	}, options: func() (Options, *logBuffer) {
		o, logs := testOptions(t)
		o.CacheDir, o.Memo, o.MemoMaxAge = dir, true, maxAge
		o.Now = func() time.Time { return clock }
		return o, logs
	}}
	cloud := wasmtest.NewThingCloud(map[string]string{"a": `{"thing":{"name":"a"}}`})
	req := crRequest("a", map[string]any{"action": "memo", "name": "a"})

	_, _, full := run.reconcile(cloud, req)
	require.True(t, full)
	_, _, full = run.reconcile(cloud, req)
	assert.False(t, full)
	clock = clock.Add(memo.DefaultMaxAge + time.Minute)
	_, _, full = run.reconcile(cloud, req)
	assert.True(t, full, "a record past the maximum age")
	_, _, full = run.reconcile(cloud, req)
	assert.False(t, full, "the full reconcile renewed it")

	opts, err := Options{LookupEnv: lookupIn([]string{memo.MaxAgeEnv + "=0"})}.fromEnv()
	require.NoError(t, err)
	maxAge = opts.MemoMaxAge
	offDir := t.TempDir()
	dir = offDir
	_, _, full = run.reconcile(cloud, req)
	assert.True(t, full)
	_, _, full = run.reconcile(cloud, req)
	assert.True(t, full, "with the memo off every reconcile is full")
	assert.NoDirExists(t, filepath.Join(offDir, "memo"))

	for _, bad := range []string{"-1h", "soon", "0s"} {
		_, err := Options{LookupEnv: lookupIn([]string{memo.MaxAgeEnv + "=" + bad})}.fromEnv()
		require.Error(t, err, bad)
		assert.Contains(t, err.Error(), memo.MaxAgeEnv, "the error names the variable")
	}
}

// A guest cannot get a result the host never recorded, nor make the host read without bound.
func TestTheMemoRefusesMisuse(t *testing.T) {
	ctx := context.Background()
	o, _ := testOptions(t)
	o.CacheDir, o.Memo = t.TempDir(), true
	p := loadTest(t, guest(t, "nativemock"), o)
	cache, err := p.NewCache(ctx)
	require.NoError(t, err)
	defer cache.Close(ctx)
	cloud := wasmtest.NewThingCloud(map[string]string{})

	_, err = p.Reconcile(ctx, cloud, cache, crRequest("a", map[string]any{"action": "memo-lie"}))
	require.Error(t, err)
	var ce *CallError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "protocol", ce.Kind)
	assert.Contains(t, err.Error(), "without an unchanged call that matched")

	_, err = p.Reconcile(ctx, cloud, cache, crRequest("b", map[string]any{"action": "memo-huge"}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "evidence exceed the limit")
}

// The unchanged call's host-side cost does not grow with the guest's memory: the number of
// pieces is bounded before any is read (a count whose pairs would span 4 GiB, which a 32-bit
// product wraps to nothing, included), and the pieces are hashed where they are.
func TestTheUnchangedCallIsBounded(t *testing.T) {
	ctx := context.Background()
	o, _ := testOptions(t)
	o.CacheDir, o.Memo = t.TempDir(), true
	o.MemoryLimitPages = 256 << 20 >> 16
	p := loadTest(t, guest(t, "rawmock"), o)
	cache, err := p.NewCache(ctx)
	require.NoError(t, err)
	defer cache.Close(ctx)
	for _, count := range []uint32{1 << 29, memo.MaxPieces + 1} {
		_, err = p.Reconcile(ctx, &fakeSession{}, cache, crRequest("a", map[string]any{"mode": "evidence-count", "count": count}))
		var ce *CallError
		require.ErrorAs(t, err, &ce, "count %d", count)
		assert.Equal(t, "abi", ce.Kind)
		assert.Contains(t, err.Error(), fmt.Sprintf("unchanged: %d pieces of evidence exceed the limit of 1024", count))
	}
	cache, err = p.NewCache(ctx)
	require.NoError(t, err)
	defer cache.Close(ctx)
	res, err := p.Reconcile(ctx, &fakeSession{}, cache, crRequest("a", map[string]any{"mode": "evidence-pieces", "count": memo.MaxPieces}))
	require.NoError(t, err)
	assert.Equal(t, []string{"hit 0"}, res.Notes, "the most pieces a call may pass")

	// 2^24 pairs (128 MiB of the guest's memory): refused before the host allocates for them.
	sample := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(sample)
	before := sample[0].Value.Uint64()
	_, err = p.Reconcile(ctx, &fakeSession{}, cache, crRequest("a", map[string]any{"mode": "evidence-pieces", "count": 1 << 24}))
	require.Error(t, err)
	metrics.Read(sample)
	assert.Less(t, sample[0].Value.Uint64()-before, uint64(16<<20), "the host allocated for the guest's pieces")
}

// The PDK moves inputs, outputs and OpenStack answers with the bulk copies (docs/abi.md, "Bulk
// copies"): whole messages of every size arrive intact, in both directions.
func TestBulkCopiesCarryWholeMessages(t *testing.T) {
	ctx := context.Background()
	o, _ := testOptions(t)
	p := loadTest(t, guest(t, "pdkmock"), o)
	cache, err := p.NewCache(ctx)
	require.NoError(t, err)
	defer cache.Close(ctx)
	for _, n := range []int{0, 1, 7, 8, 9, 4095, 100_000} {
		name := strings.Repeat("n", n)
		res, err := p.Reconcile(ctx, &fakeSession{}, cache, crRequest("a", map[string]any{"action": "echo", "name": name}))
		require.NoError(t, err, "input of %d", n)
		assert.Equal(t, []string{name}, res.Notes, "a %d-byte name there and back", n)
		res, err = p.Reconcile(ctx, &fakeSession{}, cache, crRequest("a", map[string]any{"action": "requests", "count": 1, "size": n}))
		require.NoError(t, err)
		assert.Equal(t, []string{strconv.Itoa(n)}, res.Notes, "a %d-byte answer", n)
	}
}
