package wasm

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
		p := loadTest(t, path, o)
		if p.memo != nil {
			p.memo.now = func() time.Time { return clock }
		}
		return p
	}, options: func() (Options, *logBuffer) {
		o, logs := testOptions(t)
		o.CacheDir, o.Memo, o.MemoMaxAge = dir, true, maxAge
		return o, logs
	}}
	cloud := &thingCloud{things: map[string]string{"a": `{"thing":{"name":"a"}}`}}
	req := crRequest("a", map[string]any{"action": "memo", "name": "a"})

	_, _, full := run.reconcile(cloud, req)
	require.True(t, full)
	_, _, full = run.reconcile(cloud, req)
	assert.False(t, full)
	clock = clock.Add(DefaultMemoMaxAge + time.Minute)
	_, _, full = run.reconcile(cloud, req)
	assert.True(t, full, "a record past the maximum age")
	_, _, full = run.reconcile(cloud, req)
	assert.False(t, full, "the full reconcile renewed it")

	opts, err := Options{LookupEnv: lookupIn([]string{MemoMaxAgeEnv + "=0"})}.fromEnv()
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
		_, err := Options{LookupEnv: lookupIn([]string{MemoMaxAgeEnv + "=" + bad})}.fromEnv()
		require.Error(t, err, bad)
		assert.Contains(t, err.Error(), MemoMaxAgeEnv, "the error names the variable")
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

// testMemo is a store of the plugin MOCK's records in dir, for module.
func testMemo(dir string, module string, maxBytes int, now func() time.Time) *memoStore {
	return &memoStore{cache: modulecache.Dir(dir), prefix: "MOCK", module: sha256.Sum256([]byte(module)), maxAge: time.Hour,
		maxBytes: maxBytes, now: now, log: slog.New(slog.DiscardHandler)}
}

func key(s string) memoKey { return sha256.Sum256([]byte(s)) }

// The records are a cache: a file of another module, another format or no records at all is
// replaced, never an error, and a write that cannot happen is only a warning.
func TestTheMemoFileIsACache(t *testing.T) {
	dir := t.TempDir()
	m := testMemo(dir, "module a", DefaultMemoMaxBytes, time.Now)
	require.Nil(t, m.check("uid", key("k")))
	m.record("uid", key("k"), []byte(`{"notes":["x"]}`))
	require.NoError(t, m.save())

	same := testMemo(dir, "module a", DefaultMemoMaxBytes, time.Now)
	hit := same.check("uid", key("k"))
	require.NotNil(t, hit)
	assert.JSONEq(t, `{"notes":["x"]}`, string(hit.result))
	assert.Nil(t, same.check("uid", key("other key")))

	upgraded := testMemo(dir, "module b", DefaultMemoMaxBytes, time.Now)
	assert.Nil(t, upgraded.check("uid", key("k")), "another module's records never match")
	require.NoError(t, upgraded.save())
	b, err := os.ReadFile(m.path())
	require.NoError(t, err)
	assert.NotContains(t, string(b), "uid", "and are dropped")

	for _, garbage := range []string{"not a memo", ""} {
		require.NoError(t, os.WriteFile(m.path(), []byte(garbage), 0o644))
		garbled := testMemo(dir, "module a", DefaultMemoMaxBytes, time.Now)
		assert.Nil(t, garbled.check("uid", key("k")))
	}
	// Records that pass the file's check but do not decode are no records either.
	require.NoError(t, modulecache.Dir(dir).Write(modulecache.Memo, "MOCK", sha256.Sum256([]byte("module a")), []byte{5, 1}))
	assert.Nil(t, testMemo(dir, "module a", DefaultMemoMaxBytes, time.Now).check("uid", key("k")))

	// Keys differ whenever any part differs, including where one part ends and the next begins.
	k := func(entry string, input string, ev ...string) memoKey {
		return m.key(entry, []byte(input), len(ev), func(i int) []byte { return []byte(ev[i]) })
	}
	keys := []memoKey{k("reconcile", "in", "ab"), k("reconcile", "in", "a", "b"), k("reconcile", "ina", "b"),
		k("reconcile", "in"), k("delete", "in", "ab"), k("reconcile", "in", "ab", "")}
	seen := map[memoKey]bool{}
	for _, key := range keys {
		assert.False(t, seen[key], "two different inputs share a key")
		seen[key] = true
	}
}

// The records live in the pod's cache volume and are read whole every run: a result past the
// per-CR bound is never recorded, and past the bound in all the oldest records go first, so the
// file never exceeds its bound whatever the plugin returns; a file larger than the bound (a
// lowered bound, or not the host's) is no records.
func TestTheMemoIsBoundedInBytes(t *testing.T) {
	dir := t.TempDir()
	clock := time.Unix(1_000_000, 0)
	now := func() time.Time { return clock }
	const bound = 256 << 10
	m := testMemo(dir, "module a", bound, now)
	m.record("huge", key("k"), make([]byte, maxMemoResult+1))
	assert.Nil(t, m.check("huge", key("k")), "a result past the per-CR bound is not recorded")
	m.record("long", key("k"), []byte("{}"))
	m.record("long", key("k"), make([]byte, maxMemoResult+1))
	assert.Nil(t, m.check("long", key("k")), "and takes the CR's older record with it")

	result := make([]byte, 16<<10)
	for i := range 40 { // 640 KiB of results for a 256 KiB bound
		clock = clock.Add(time.Second)
		m.record(fmt.Sprint("cr-", i), key("k"), result)
	}
	require.NoError(t, m.save())
	st, err := os.Stat(m.path())
	require.NoError(t, err)
	assert.LessOrEqual(t, st.Size(), int64(bound+128), "the file stays within its bound (and the cache's header)")

	again := testMemo(dir, "module a", bound, now)
	var kept []int
	for i := range 40 {
		if again.check(fmt.Sprint("cr-", i), key("k")) != nil {
			kept = append(kept, i)
		}
	}
	require.Greater(t, len(kept), 10)
	assert.Less(t, len(kept), 16)
	assert.Equal(t, 40-len(kept), kept[0], "the newest records are kept: %v", kept)

	smaller := testMemo(dir, "module a", 64<<10, now)
	assert.Nil(t, smaller.check("cr-39", key("k")), "a file past the bound is no records")
}

// A record dated after now is never used (a clock set back, or a file not written here): the
// maximum age counts from when a full reconcile verified the CR, which must have been before now.
func TestARecordFromTheFutureIsNeverUsed(t *testing.T) {
	dir := t.TempDir()
	clock := time.Unix(2_000_000, 0)
	m := testMemo(dir, "module a", DefaultMemoMaxBytes, func() time.Time { return clock })
	m.record("uid", key("k"), []byte("{}"))
	require.NoError(t, m.save())
	clock = clock.Add(-time.Minute)
	past := testMemo(dir, "module a", DefaultMemoMaxBytes, func() time.Time { return clock })
	assert.Nil(t, past.check("uid", key("k")), "made a minute after now")
	past.forget("other") // loads and marks nothing
	past.record("other", key("k"), []byte("{}"))
	require.NoError(t, past.save())
	again := testMemo(dir, "module a", DefaultMemoMaxBytes, func() time.Time { return clock.Add(time.Second) })
	assert.NotNil(t, again.check("other", key("k")))
	clock = clock.Add(2 * time.Minute)
	assert.Nil(t, again.check("uid", key("k")), "the future record was dropped at the last save")
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
	for _, count := range []uint32{1 << 29, maxMemoPieces + 1} {
		_, err = p.Reconcile(ctx, &fakeSession{}, cache, crRequest("a", map[string]any{"mode": "evidence-count", "count": count}))
		var ce *CallError
		require.ErrorAs(t, err, &ce, "count %d", count)
		assert.Equal(t, "abi", ce.Kind)
		assert.Contains(t, err.Error(), fmt.Sprintf("unchanged: %d pieces of evidence exceed the limit of 1024", count))
	}
	cache, err = p.NewCache(ctx)
	require.NoError(t, err)
	defer cache.Close(ctx)
	res, err := p.Reconcile(ctx, &fakeSession{}, cache, crRequest("a", map[string]any{"mode": "evidence-pieces", "count": maxMemoPieces}))
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

// memoChildEnv holds "<dir>,<result bytes>,<records>": the child records that many results of
// that size in one plugin's memo, saves it, loads it again in a second store as the next run
// does, answers every record, records them all again and saves, then reports its peak RSS.
const memoChildEnv = "OPENSTACK_SYNC_TEST_MEMO_CHILD"

func memoChild(spec string) int {
	defer printPeakRSS()
	parts := strings.Split(spec, ",")
	size, _ := strconv.Atoi(parts[1])
	n, _ := strconv.Atoi(parts[2])
	result := make([]byte, size)
	for run := range 2 {
		m := testMemo(parts[0], "module a", DefaultMemoMaxBytes, time.Now)
		for i := range n {
			m.check(fmt.Sprint("cr-", i), key("k"))
			m.record(fmt.Sprint("cr-", i), key(fmt.Sprint("k", run)), result)
		}
		if err := m.save(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

// The memo's cost to the hook's memory is bounded by its bound in bytes, whatever the plugin
// returns and however many CRs it has: a run that reads the records, answers them and writes them
// again holds at most MemoMemoryFactor times the bound over an idle process (measured: 200 CRs of
// 1 MiB results once took a process to 1.1 GB).
func TestTheMemoStaysWithinItsMemoryBound(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process per case")
	}
	run := func(size, n int, limit int64) int64 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s,%d,%d", memoChildEnv, t.TempDir(), size, n))
		if limit > 0 {
			// As the chart runs the hook (GOMEMLIMIT, charts/…/_helpers.tpl): what is measured is
			// what the memo holds, not the garbage a collector starved of CPU has not yet freed
			// (a loaded machine once took the 60 KiB case from 40 to 64 MiB).
			cmd.Env = append(cmd.Env, fmt.Sprintf("GOMEMLIMIT=%dB", limit))
		}
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		return peakRSS(cmd, string(out))
	}
	base := run(0, 0, 0)
	for _, c := range []struct{ size, n int }{{1 << 20, 200}, {60 << 10, 1000}, {200, 50_000}} {
		bound := base + MemoMemoryFactor*DefaultMemoMaxBytes
		rss := run(c.size, c.n, MemoMemoryFactor*DefaultMemoMaxBytes)
		t.Logf("%d records of %d bytes: peak RSS %d MiB, bound %d MiB (idle %d MiB)", c.n, c.size, rss>>20, bound>>20, base>>20)
		assert.LessOrEqual(t, rss, bound, "%d records of %d bytes", c.n, c.size)
	}
}

// The pieces of evidence are bounded whatever carries them (the native build's frames included),
// before any is read.
func TestTheMemoRefusesTooManyPieces(t *testing.T) {
	ci := &callInfo{entry: EntryReconcile, memo: &memoCall{store: testMemo(t.TempDir(), "module a", DefaultMemoMaxBytes, time.Now), uid: "u"}}
	read := 0
	_, err := ci.unchanged(maxMemoPieces+1, func(int) []byte { read++; return nil })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "1025 pieces of evidence exceed the limit of 1024")
	assert.Zero(t, read, "no piece was read")
	hit, err := ci.unchanged(maxMemoPieces, func(int) []byte { return []byte("x") })
	require.NoError(t, err)
	assert.False(t, hit)
}
