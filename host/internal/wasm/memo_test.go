package wasm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/memo"
	"github.com/openstack-sync/openstack-sync/host/internal/modulecache"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

// thingCloud is a stateful things API: GET v2.0/things/<name> answers the thing's JSON, POST
// creates one. Tests change a thing behind the plugin's back to see the memo notice.
type thingCloud struct {
	mu     sync.Mutex
	things map[string]string
	writes int
	reads  int
}

func (c *thingCloud) Do(_ context.Context, req plugin.Request) (*plugin.Response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	answer := func(status int, body string) *plugin.Response {
		return &plugin.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(body)}
	}
	switch {
	case req.Method == "GET" && strings.HasPrefix(req.Path, "v2.0/things/"):
		c.reads++
		if t, ok := c.things[strings.TrimPrefix(req.Path, "v2.0/things/")]; ok {
			return answer(200, t), nil
		}
		return answer(404, `{"NeutronError":{"message":"Thing not found"}}`), nil
	case req.Method == "POST" && req.Path == "v2.0/things":
		c.writes++
		var body struct {
			Thing struct{ Name string } `json:"thing"`
		}
		_ = json.Unmarshal(req.Body, &body)
		c.things[body.Thing.Name] = `{"thing":{"name":"` + body.Thing.Name + `","size":1}}`
		return answer(201, c.things[body.Thing.Name]), nil
	}
	return answer(400, `{"NeutronError":{"message":"unexpected"}}`), nil
}

func (c *thingCloud) set(name, body string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.things[name] = body
}

// memoRun is one hook run of the memo mock: a plugin loaded afresh (as each run is a process of
// its own) over the shared cache directory, one reconcile, Close.
type memoRun struct {
	t       *testing.T
	load    func(o Options) plugin.Plugin
	options func() (Options, *logBuffer)
}

// reconcile runs a whole "hook run" of one CR and returns its result, its error and whether the
// guest did the full reconcile (it logs "full reconcile" only then).
func (r memoRun) reconcile(cloud *thingCloud, req plugin.ReconcileRequest) (plugin.Result, error, bool) {
	ctx := context.Background()
	o, logs := r.options()
	p := r.load(o)
	cache, err := p.NewCache(ctx)
	require.NoError(r.t, err)
	res, rerr := p.Reconcile(ctx, cloud, cache, req)
	require.NoError(r.t, cache.Close(ctx))
	require.NoError(r.t, p.Close(ctx))
	return res, rerr, strings.Contains(logs.String(), "full reconcile")
}

// The convergence memo (docs/abi.md): a CR whose input and evidence a successful, write-free
// reconcile saw before is answered with that reconcile's result without the guest's full
// reconcile; anything that differs (evidence, spec, configuration, age) reconciles in full. The
// same through the module and through the native build, as the benchmark compares them.
func TestTheConvergenceMemo(t *testing.T) {
	builds := map[string]func(t *testing.T) func(o Options) plugin.Plugin{
		"wasm": func(t *testing.T) func(o Options) plugin.Plugin {
			path := guest(t, "nativemock")
			return func(o Options) plugin.Plugin {
				p, err := Load(context.Background(), path, o)
				require.NoError(t, err)
				return p
			}
		},
		"native": func(t *testing.T) func(o Options) plugin.Plugin {
			if testing.Short() {
				t.Skip("builds a plugin natively")
			}
			exe := buildNative(t, "nativemock")
			return func(o Options) plugin.Plugin {
				p, err := LoadNative(context.Background(), exe, o)
				require.NoError(t, err)
				return p
			}
		},
	}
	for name, build := range builds {
		t.Run(name, func(t *testing.T) {
			load := build(t)
			dir := t.TempDir()
			env := []string{"MOCK_GREETING=hello"}
			run := memoRun{t: t, load: load, options: func() (Options, *logBuffer) {
				o, logs := testOptions(t, env...)
				o.CacheDir, o.Memo = dir, true
				o.Environ = func() []string { return env }
				return o, logs
			}}
			cloud := &thingCloud{things: map[string]string{}}
			req := crRequest("a", map[string]any{"action": "memo", "name": "a"})

			_, err, full := run.reconcile(cloud, req)
			require.NoError(t, err)
			assert.True(t, full, "nothing recorded yet")
			assert.Equal(t, 1, cloud.writes, "the thing was created")
			memoFile := modulecache.Dir(dir).Path(modulecache.Memo, "MOCK")
			assert.NoFileExists(t, memoFile, "a reconcile that wrote records nothing")

			first, err, full := run.reconcile(cloud, req)
			require.NoError(t, err)
			assert.True(t, full, "the first reconcile of the steady state is full")
			assert.FileExists(t, memoFile, "and, free of writes, recorded")

			again, err, full := run.reconcile(cloud, req)
			require.NoError(t, err)
			assert.False(t, full, "same input, same evidence: the recorded result")
			assert.Equal(t, first, again, "the recorded result is the full reconcile's")

			cloud.set("a", `{"thing":{"name":"a","size":2}}`)
			changed, err, full := run.reconcile(cloud, req)
			require.NoError(t, err)
			assert.True(t, full, "the evidence changed: a full reconcile")
			assert.Contains(t, changed.Notes[0], `"size":2`)
			_, _, full = run.reconcile(cloud, req)
			assert.False(t, full, "and the new state is recorded")

			req.Object.Generation = new(int64(4))
			_, _, full = run.reconcile(cloud, req)
			assert.True(t, full, "the input changed (a new generation)")

			env = []string{"MOCK_GREETING=bonjour"}
			_, _, full = run.reconcile(cloud, req)
			assert.True(t, full, "the plugin's configuration changed")
			_, _, full = run.reconcile(cloud, req)
			assert.False(t, full)

			other := crRequest("b", map[string]any{"action": "memo", "name": "a"})
			_, _, full = run.reconcile(cloud, other)
			assert.True(t, full, "records are per CR (UID)")

			assert.Equal(t, 1, cloud.writes, "no reconcile after the create wrote anything")
			assert.Equal(t, 9, cloud.reads, "each of the nine runs reads the evidence once")
		})
	}
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
	cloud := &thingCloud{things: map[string]string{"a": `{"thing":{"name":"a"}}`}}
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
	cloud := &thingCloud{things: map[string]string{}}

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
