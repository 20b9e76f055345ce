package wasm

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
	"sigs.k8s.io/yaml"

	"github.com/openstack-sync/openstack-sync/host/internal/memo"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm/admission"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm/wasmtest"
)

// memoryChildEnv holds "<module>,<memory MiB>,<instances>,<cache dir>": the child loads the
// module with that sandbox, drives that many instances at once to their memory limit (the mock
// guest's "hog" action allocates until the guest's memory cannot grow) and exits.
const memoryChildEnv = "OPENSTACK_SYNC_TEST_MEMORY_CHILD"

func memoryChild(spec string) int {
	parts := strings.Split(spec, ",")
	if len(parts) != 4 {
		fmt.Fprintln(os.Stderr, "want module,MiB,instances,cache")
		return 1
	}
	mib, _ := strconv.Atoi(parts[1])
	n, _ := strconv.Atoi(parts[2])
	ctx := context.Background()
	log, _ := testLogger()
	p, err := load(ctx, parts[0], Options{CacheDir: parts[3], MemoryLimitPages: uint32(mib * 16), PoolSize: n, Concurrency: n,
		LookupEnv: lookupIn(nil), Logger: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer p.Close(ctx)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			cache, err := p.NewCache(ctx)
			if err != nil {
				errs[i] = err
				return
			}
			defer cache.Close(ctx)
			_, errs[i] = p.Reconcile(ctx, &fakeSession{}, cache, crRequest("hog", map[string]any{"action": "hog"}))
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "out of memory") {
			fmt.Fprintln(os.Stderr, "want the guest to run out of memory, got", err)
			return 1
		}
	}
	fmt.Println("every guest reached its limit")
	return 0
}

// TestGuestsAtTheirMemoryLimitKeepHostRSSWithinTheBound runs guests that allocate until their
// sandbox refuses (docs/reliability.md, "Memory per instance") in a child process and compares
// its peak RSS with the documented bound: the idle host plus, per instance, the guest limit and
// InstanceOverheadBytes.
func TestGuestsAtTheirMemoryLimitKeepHostRSSWithinTheBound(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process per case")
	}
	path := guest(t, "pdkmock")
	cache := sharedCacheDir(t)
	run := func(mib, n int) int64 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s,%d,%d,%s", memoryChildEnv, path, mib, n, cache))
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Contains(t, string(out), "every guest reached its limit")
		return cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
	}
	// The idle host: the module loaded from the cache (every run but a pod's first; the first
	// compiles, within the load bound of "Bounded load").
	run(32, 0)
	base := run(32, 0)
	for _, c := range []struct{ mib, n int }{{32, 1}, {32, 2}, {128, 1}, {64, 4}} {
		rss := run(c.mib, c.n)
		bound := HostMemoryBound(base, Options{MemoryLimitPages: uint32(c.mib * 16)}, c.n)
		t.Logf("%d instance(s) of %d MiB at their limit: peak RSS %d MiB, bound %d MiB (idle host %d MiB)",
			c.n, c.mib, rss>>20, bound>>20, base>>20)
		assert.LessOrEqual(t, rss, bound, "%d instance(s) of %d MiB", c.n, c.mib)
	}
}

// stackChildEnv makes the child call a function that recurses without end (with that many i32
// locals a frame), on the runtime configuration Load uses, until wazero refuses to grow the call
// stack; "idle" only instantiates the module.
const stackChildEnv = "OPENSTACK_SYNC_TEST_STACK_CHILD"

func stackChild(mode string) int {
	ctx := context.Background()
	// reconcile (function 4 of the entry points) calls itself; "idle" only instantiates.
	exports := wasmtest.EntryPoints()
	exports[4].Body = []byte{0x10, 4}
	if n, err := strconv.Atoi(mode); err == nil {
		exports[4].Locals = uint32(n)
	}
	m := wasmtest.Module{Memory: true, Exports: exports}.Encode()
	r := wazero.NewRuntimeWithConfig(ctx, runtimeConfig(Options{}.withDefaults(), true))
	defer r.Close(ctx)
	mod, err := r.Instantiate(ctx, m)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if mode == "idle" {
		return 0
	}
	_, err = mod.ExportedFunction("reconcile").Call(ctx)
	fmt.Println("recursion ended:", err)
	return 0
}

// A module that recurses without end stops at wazero's stack ceiling, within NativeStackBytes of
// the idle process, whatever its frames hold.
func TestUnboundedRecursionStaysWithinTheNativeStackBound(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process per case")
	}
	run := func(env ...string) (int64, string) {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		return cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10, string(out)
	}
	idle, _ := run(stackChildEnv + "=idle")
	for _, locals := range []string{"0", "65536"} {
		rss, out := run(stackChildEnv + "=" + locals)
		assert.Contains(t, out, "stack overflow")
		t.Logf("recursion with %s locals a frame: peak RSS %d MiB (idle %d MiB, bound %d MiB)", locals, rss>>20, idle>>20,
			(idle+NativeStackBytes)>>20)
		assert.LessOrEqual(t, rss, idle+NativeStackBytes)
	}
}

// The chart derives the pod's memory from the plugins' limits with the host's numbers
// (charts/openstack-sync-operator/values.yaml, memory): they must cover what this package bounds.
func TestChartMemoryValuesCoverTheHostsBound(t *testing.T) {
	const chart = "../../../charts/openstack-sync-operator/"
	raw, err := os.ReadFile(chart + "values.yaml")
	require.NoError(t, err)
	var values struct {
		Memory struct {
			LoadMiB             int64 `json:"loadMiB"`
			InstanceOverheadMiB int64 `json:"instanceOverheadMiB"`
			MemoMemoryFactor    int64 `json:"memoMemoryFactor"`
		} `json:"memory"`
		CompilationCache struct {
			MemoMinMiB int64 `json:"memoMinMiB"`
		} `json:"compilationCache"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &values))
	assert.GreaterOrEqual(t, values.Memory.InstanceOverheadMiB<<20, InstanceOverhead(Options{}), "memory.instanceOverheadMiB")
	// The load bound of "Bounded load" for a module of 5 MB (the plugins here are 3.5-4.2 MB),
	// over the ~15 MiB of a process loading the smallest module.
	assert.GreaterOrEqual(t, values.Memory.LoadMiB<<20, int64(16<<20+5<<20*admission.LoadBytesPerModuleByte+admission.LoadFixedBudget), "memory.loadMiB")
	assert.GreaterOrEqual(t, values.Memory.MemoMemoryFactor, int64(memo.MemoryFactor), "memory.memoMemoryFactor")
	// The chart's memo bound follows memory.crs (docs/scaling.md); a release of few CRs gets the
	// least bound, the host's own default.
	assert.Equal(t, int64(memo.DefaultMaxBytes>>20), values.CompilationCache.MemoMinMiB, "compilationCache.memoMinMiB is the host's default")

	helpers, err := os.ReadFile(chart + "templates/_helpers.tpl")
	require.NoError(t, err)
	assert.Contains(t, string(helpers), fmt.Sprintf("$limits.poolSize | default %d", DefaultPoolSize),
		"the chart assumes the host's default pool size")
	assert.Contains(t, string(helpers), fmt.Sprintf("$limits.memoryMiB | default %d", DefaultMemoryLimitPages/16),
		"the chart assumes the host's default memory limit")
	assert.Contains(t, string(helpers), fmt.Sprintf("$cc.memoMinMiB | default %d", memo.DefaultMaxBytes>>20),
		"the chart assumes the host's default memo bound")
}
