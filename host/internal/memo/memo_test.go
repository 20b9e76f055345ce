package memo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/modulecache"
	"github.com/openstack-sync/openstack-sync/host/internal/peakrss"
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(memoChildEnv); spec != "" {
		os.Exit(memoChild(spec))
	}
	os.Exit(m.Run())
}

// testMemo is a store of the plugin MOCK's records in dir, for module.
func testMemo(dir string, module string, maxBytes int, now func() time.Time) *Store {
	return New(Config{Cache: modulecache.Dir(dir), Prefix: "MOCK", Module: sha256.Sum256([]byte(module)), MaxAge: time.Hour,
		MaxBytes: maxBytes, Now: now})
}

func key(s string) Key { return sha256.Sum256([]byte(s)) }

// The records are a cache: a file of another module, another format or no records at all is
// replaced, never an error, and a write that cannot happen is only a warning.
func TestTheMemoFileIsACache(t *testing.T) {
	dir := t.TempDir()
	m := testMemo(dir, "module a", DefaultMaxBytes, time.Now)
	require.Nil(t, m.check("uid", key("k")))
	m.record("uid", key("k"), []byte(`{"notes":["x"]}`))
	require.NoError(t, m.Save())

	same := testMemo(dir, "module a", DefaultMaxBytes, time.Now)
	hit := same.check("uid", key("k"))
	require.NotNil(t, hit)
	assert.JSONEq(t, `{"notes":["x"]}`, string(hit.result))
	assert.Nil(t, same.check("uid", key("other key")))

	upgraded := testMemo(dir, "module b", DefaultMaxBytes, time.Now)
	assert.Nil(t, upgraded.check("uid", key("k")), "another module's records never match")
	require.NoError(t, upgraded.Save())
	b, err := os.ReadFile(m.Path())
	require.NoError(t, err)
	assert.NotContains(t, string(b), "uid", "and are dropped")

	for _, garbage := range []string{"not a memo", ""} {
		require.NoError(t, os.WriteFile(m.Path(), []byte(garbage), 0o644))
		garbled := testMemo(dir, "module a", DefaultMaxBytes, time.Now)
		assert.Nil(t, garbled.check("uid", key("k")))
	}
	// Records that pass the file's check but do not decode are no records either.
	require.NoError(t, modulecache.Dir(dir).Write(modulecache.Memo, "MOCK", sha256.Sum256([]byte("module a")), []byte{5, 1}))
	assert.Nil(t, testMemo(dir, "module a", DefaultMaxBytes, time.Now).check("uid", key("k")))

	// Keys differ whenever any part differs, including where one part ends and the next begins.
	k := func(entry string, input string, ev ...string) Key {
		return m.key(entry, []byte(input), len(ev), func(i int) []byte { return []byte(ev[i]) })
	}
	keys := []Key{k("reconcile", "in", "ab"), k("reconcile", "in", "a", "b"), k("reconcile", "ina", "b"),
		k("reconcile", "in"), k("delete", "in", "ab"), k("reconcile", "in", "ab", "")}
	seen := map[Key]bool{}
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
	m.record("huge", key("k"), make([]byte, maxResult+1))
	assert.Nil(t, m.check("huge", key("k")), "a result past the per-CR bound is not recorded")
	m.record("long", key("k"), []byte("{}"))
	m.record("long", key("k"), make([]byte, maxResult+1))
	assert.Nil(t, m.check("long", key("k")), "and takes the CR's older record with it")

	result := make([]byte, 16<<10)
	for i := range 40 { // 640 KiB of results for a 256 KiB bound
		clock = clock.Add(time.Second)
		m.record(fmt.Sprint("cr-", i), key("k"), result)
	}
	require.NoError(t, m.Save())
	st, err := os.Stat(m.Path())
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
	m := testMemo(dir, "module a", DefaultMaxBytes, func() time.Time { return clock })
	m.record("uid", key("k"), []byte("{}"))
	require.NoError(t, m.Save())
	clock = clock.Add(-time.Minute)
	past := testMemo(dir, "module a", DefaultMaxBytes, func() time.Time { return clock })
	assert.Nil(t, past.check("uid", key("k")), "made a minute after now")
	past.forget("other") // loads and marks nothing
	past.record("other", key("k"), []byte("{}"))
	require.NoError(t, past.Save())
	again := testMemo(dir, "module a", DefaultMaxBytes, func() time.Time { return clock.Add(time.Second) })
	assert.NotNil(t, again.check("other", key("k")))
	clock = clock.Add(2 * time.Minute)
	assert.Nil(t, again.check("uid", key("k")), "the future record was dropped at the last save")
}

// memoChildEnv holds "<dir>,<result bytes>,<records>,<bound>": the child records that many
// results of that size in one plugin's memo of that bound, saves it, loads it again in a second
// store as the next run does, answers every record, records them all again and saves, then
// reports its peak RSS.
const memoChildEnv = "OPENSTACK_SYNC_TEST_MEMO_CHILD"

func memoChild(spec string) int {
	defer peakrss.Print()
	parts := strings.Split(spec, ",")
	size, _ := strconv.Atoi(parts[1])
	n, _ := strconv.Atoi(parts[2])
	bound, _ := strconv.Atoi(parts[3])
	result := make([]byte, size)
	for run := range 2 {
		m := testMemo(parts[0], "module a", bound, time.Now)
		for i := range n {
			m.check(fmt.Sprint("cr-", i), key("k"))
			m.record(fmt.Sprint("cr-", i), key(fmt.Sprint("k", run)), result)
		}
		if err := m.Save(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

// The memo's cost to the hook's memory is bounded by its bound in bytes, whatever the plugin
// returns and however many CRs it has: a run that reads the records, answers them and writes them
// again holds at most MemoryFactor times the bound over an idle process (measured: 200 CRs of
// 1 MiB results once took a process to 1.1 GB). The bound follows a site's CRs (the chart derives
// it from memory.crs), so the factor holds at the default bound and at a 20,000-runbook site's.
func TestTheMemoStaysWithinItsMemoryBound(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process per case")
	}
	run := func(size, n, bound int, limit int64) int64 {
		// A memo past its bound leaves the child's collector spinning at GOMEMLIMIT for ever; the
		// deadline turns that into this test's failure, not a go test timeout that orphans the
		// child (a mutation run once left one spinning for an hour). Healthy children take seconds.
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
		cmd.WaitDelay = 5 * time.Second
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s,%d,%d,%d", memoChildEnv, t.TempDir(), size, n, bound))
		if limit > 0 {
			// As the chart runs the hook (GOMEMLIMIT, charts/…/_helpers.tpl): what is measured is
			// what the memo holds, not the garbage a collector starved of CPU has not yet freed
			// (a loaded machine once took the 60 KiB case from 40 to 64 MiB). The limit is half
			// the bound: with it at the bound, the 60 MB of garbage the 60 KiB case makes kept
			// the heap at the bound itself and a late collection on a loaded machine went past it.
			cmd.Env = append(cmd.Env, fmt.Sprintf("GOMEMLIMIT=%dB", limit))
		}
		out, err := cmd.CombinedOutput()
		require.NoError(t, ctx.Err(), "%d records of %d bytes: the child did not finish (a memo past its bound?)", n, size)
		require.NoError(t, err, "%s", out)
		return peakrss.Of(cmd, string(out))
	}
	base := run(0, 0, DefaultMaxBytes, 0)
	for _, c := range []struct{ size, n, bound int }{
		{1 << 20, 200, DefaultMaxBytes}, {60 << 10, 1000, DefaultMaxBytes}, {200, 50_000, DefaultMaxBytes},
		// Runbooks with notes (~700 bytes a record) at the bound the chart derives for 20,000 of
		// them, with more CRs than it holds (measured 1.9 times the bound at 20,000, 3.1 at 36,000).
		{600, 36_000, 17 << 20},
	} {
		bound := base + int64(MemoryFactor*c.bound)
		rss := run(c.size, c.n, c.bound, int64(MemoryFactor*c.bound/2))
		t.Logf("%d records of %d bytes, bound %d MiB: peak RSS %d MiB, %.1f times the bound over idle (%d MiB); limit %d MiB",
			c.n, c.size, c.bound>>20, rss>>20, float64(rss-base)/float64(c.bound), base>>20, bound>>20)
		assert.LessOrEqual(t, rss, bound, "%d records of %d bytes", c.n, c.size)
	}
}

// The pieces of evidence are bounded whatever carries them (the native build's frames included),
// before any is read.
func TestTheMemoRefusesTooManyPieces(t *testing.T) {
	c := testMemo(t.TempDir(), "module a", DefaultMaxBytes, time.Now).Begin("u", nil)
	read := 0
	_, err := c.Unchanged("reconcile", MaxPieces+1, func(int) []byte { read++; return nil })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "1025 pieces of evidence exceed the limit of 1024")
	assert.Zero(t, read, "no piece was read")
	hit, err := c.Unchanged("reconcile", MaxPieces, func(int) []byte { return []byte("x") })
	require.NoError(t, err)
	assert.False(t, hit)
}

// A run whose records outgrow the bound says so once, naming the plugin, how many CRs lost their
// record, the bound and what to raise: a site that outgrew memory.crs reconciles those CRs in
// full every run, and nothing else would tell its operator why.
func TestARunThatOutgrowsTheBoundWarnsOnce(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil)).With("plugin", "mock-plugin")
	clock := time.Unix(1_000_000, 0)
	newStore := func(bound int) *Store {
		return New(Config{Cache: modulecache.Dir(t.TempDir()), Prefix: "MOCK", Module: sha256.Sum256([]byte("m")), MaxAge: time.Hour,
			MaxBytes: bound, Now: func() time.Time { return clock }, Log: log})
	}
	const bound = 64 << 10
	result := make([]byte, 600) // a runbook's result with its notes
	m := newStore(bound)
	for i := range 300 { // 300 × ~700 bytes: ~210 KB for a 64 KiB bound
		clock = clock.Add(time.Second)
		m.record(fmt.Sprint("cr-", i), key("k"), result)
	}
	require.NoError(t, m.Save())
	kept := 0
	for i := range 300 {
		if m.check(fmt.Sprint("cr-", i), key("k")) != nil {
			kept++
		}
	}
	require.Positive(t, kept)
	assert.Equal(t, 300-kept, m.Evicted())
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	require.Len(t, lines, 1, "one warning per run: %s", logs.String())
	var line map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &line))
	assert.Equal(t, "WARN", line["level"])
	assert.Equal(t, "mock-plugin", line["plugin"])
	assert.EqualValues(t, 300-kept, line["dropped"])
	assert.EqualValues(t, kept, line["kept"])
	assert.Equal(t, "0.1", line["boundMiB"])
	assert.Contains(t, line["msg"], "raise memory.crs")
	assert.Contains(t, line["msg"], MaxMiBEnv)

	logs.Reset()
	fits := newStore(bound)
	for i := range 50 {
		fits.record(fmt.Sprint("cr-", i), key("k"), result)
	}
	require.NoError(t, fits.Save())
	assert.Zero(t, fits.Evicted())
	assert.Empty(t, logs.String(), "records within the bound warn of nothing")

	// Records past their maximum age are not the bound's doing.
	aged := newStore(bound)
	aged.record("old", key("k"), result)
	clock = clock.Add(2 * time.Hour)
	require.NoError(t, aged.Save())
	assert.Zero(t, aged.Evicted())
	assert.Empty(t, logs.String())
}

// A run tells how many of its unchanged calls found no record (the run replay records only a
// run without any: its next run, answered from these records, reads less); a hit, a call outside
// a reconcile and a nil store count none.
func TestTheStoreCountsItsMisses(t *testing.T) {
	dir := t.TempDir()
	ev := func(s string) func(int) []byte { return func(int) []byte { return []byte(s) } }
	first := testMemo(dir, "module a", DefaultMaxBytes, time.Now)
	for _, uid := range []string{"a", "b"} {
		c := first.Begin(uid, []byte("input "+uid))
		hit, err := c.Unchanged("reconcile", 1, ev("evidence"))
		require.NoError(t, err)
		require.False(t, hit)
		c.Settle(true, []byte("{}"), nil)
	}
	assert.Equal(t, 2, first.Misses(), "no records yet: both calls missed")
	require.NoError(t, first.Save())

	next := testMemo(dir, "module a", DefaultMaxBytes, time.Now)
	c := next.Begin("a", []byte("input a"))
	hit, err := c.Unchanged("reconcile", 1, ev("evidence"))
	require.NoError(t, err)
	require.True(t, hit)
	assert.Equal(t, 0, next.Misses(), "a hit is no miss")
	c = next.Begin("b", []byte("input b"))
	hit, err = c.Unchanged("reconcile", 1, ev("other evidence"))
	require.NoError(t, err)
	require.False(t, hit)
	assert.Equal(t, 1, next.Misses(), "changed evidence misses")

	var none *Store
	assert.Equal(t, 0, none.Misses())
	var outside *Call
	_, _ = outside.Unchanged("reconcile", 1, ev("evidence"))
	assert.Equal(t, 1, next.Misses())
}
