package wasm

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"

	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/pdk/abi"
)

// Benchmarks of docs/benchmarks.md. Run with:
//
//	nice go test ./host/internal/wasm/ -run '^$' -bench . -benchtime 2s

// cpuTime is the process's user+system CPU time: on a shared machine wall time includes the
// time other processes hold the cores, CPU time does not.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports CPU time per op (and per unit when per > 1) since start.
func reportCPU(b *testing.B, start time.Duration, per int, unit string) {
	cpu := float64((cpuTime() - start).Nanoseconds()) / float64(b.N)
	b.ReportMetric(cpu, "cpu-ns/op")
	if per > 1 {
		b.ReportMetric(cpu/float64(per), "cpu-"+unit)
	}
}

func quietOptions(b *testing.B) Options {
	o, _ := testOptions(b)
	o.TrustedNoInterrupt = os.Getenv("BENCH_NO_INTERRUPT") == "1"
	return o
}

// benchInstance loads the mock guest and checks out one instance for the benchmark's duration.
func benchInstance(b *testing.B) (*Plugin, *instance) {
	ctx := context.Background()
	p := loadTest(b, guest(b, "pdkmock"), quietOptions(b))
	inst, err := p.pool.get(ctx)
	require.NoError(b, err)
	b.Cleanup(func() { p.pool.put(ctx, inst) })
	return p, inst
}

// BenchmarkCompileCold compiles the guest with no cache at all.
func BenchmarkCompileCold(b *testing.B) {
	ctx := context.Background()
	wasmBytes, err := os.ReadFile(guest(b, "pdkmock"))
	require.NoError(b, err)
	for b.Loop() {
		r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler())
		_, err := r.CompileModule(ctx, wasmBytes)
		require.NoError(b, err)
		r.Close(ctx)
	}
}

// BenchmarkCompileCacheHit is what a new process pays: a fresh cache object over a warm cache
// directory, a fresh runtime, CompileModule.
func BenchmarkCompileCacheHit(b *testing.B) {
	ctx := context.Background()
	wasmBytes, err := os.ReadFile(guest(b, "pdkmock"))
	require.NoError(b, err)
	dir := filepath.Join(b.TempDir(), "cache")
	warm := func() (wazero.CompilationCache, wazero.Runtime) {
		c, err := wazero.NewCompilationCacheWithDir(dir)
		require.NoError(b, err)
		r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().WithCompilationCache(c))
		_, err = r.CompileModule(ctx, wasmBytes)
		require.NoError(b, err)
		return c, r
	}
	c, r := warm()
	r.Close(ctx)
	c.Close(ctx)
	cpu := cpuTime()
	for b.Loop() {
		c, r := warm()
		r.Close(ctx)
		c.Close(ctx)
	}
	reportCPU(b, cpu, 1, "")
}

// BenchmarkLoadCacheHit is the whole Load of a new process with a warm cache: read, hash,
// compile from cache, validate, first instance, metadata.
func BenchmarkLoadCacheHit(b *testing.B) {
	ctx := context.Background()
	o := quietOptions(b)
	o.CacheDir = filepath.Join(b.TempDir(), "cache")
	path := guest(b, "pdkmock")
	p, err := load(ctx, path, o)
	require.NoError(b, err)
	p.Close(ctx)
	cpu := cpuTime()
	for b.Loop() {
		p, err := load(ctx, path, o)
		require.NoError(b, err)
		p.Close(ctx)
	}
	reportCPU(b, cpu, 1, "")
}

// BenchmarkInstanceReady instantiates (with _initialize) and makes the first call.
func BenchmarkInstanceReady(b *testing.B) {
	ctx := context.Background()
	p := loadTest(b, guest(b, "pdkmock"), quietOptions(b))
	cpu := cpuTime()
	defer func() { reportCPU(b, cpu, 1, "") }()
	for b.Loop() {
		inst, err := p.newInstance(ctx)
		require.NoError(b, err)
		_, err = p.invoke(ctx, inst, &callInfo{entry: abi.EntryGroupBegin, log: p.log}, v1Envelope)
		require.NoError(b, err)
		inst.mod.Close(ctx)
	}
}

// BenchmarkEmptyCall calls an export that does nothing: the bare host→guest call.
func BenchmarkEmptyCall(b *testing.B) {
	ctx := context.Background()
	_, inst := benchInstance(b)
	fn := inst.mod.ExportedFunction("openstack_sync_abi_v1")
	for b.Loop() {
		if _, err := fn.Call(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEmptyCallWithIO is a group_begin: JSON input read through the kernel, nothing done.
func BenchmarkEmptyCallWithIO(b *testing.B) {
	ctx := context.Background()
	p, inst := benchInstance(b)
	ci := &callInfo{entry: abi.EntryGroupBegin, log: p.log}
	for b.Loop() {
		if _, err := p.invoke(ctx, inst, ci, v1Envelope); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEchoCall calls an export that copies a 64-byte input to its output: the host→guest
// call with input and output, and no work.
func BenchmarkEchoCall(b *testing.B) {
	ctx := context.Background()
	p, inst := benchInstance(b)
	inst.fns["bench_echo"] = inst.mod.ExportedFunction("bench_echo")
	ci := &callInfo{entry: "bench_echo", log: p.log}
	input := []byte(`{"abi_version":1,"padding":"0123456789012345678901234567890123"}`)
	cpu := cpuTime()
	for b.Loop() {
		out, err := p.invoke(ctx, inst, ci, input)
		if err != nil || len(out) != len(input) {
			b.Fatal(err, len(out))
		}
	}
	reportCPU(b, cpu, 1, "")
}

// BenchmarkTrivialReconcile is a full adapter Reconcile (encode, call, decode spec, output, decode
// result) that does no OpenStack work, on one pinned instance.
func BenchmarkTrivialReconcile(b *testing.B) {
	ctx := context.Background()
	p := loadTest(b, guest(b, "pdkmock"), quietOptions(b))
	cache, err := p.NewCache(ctx)
	require.NoError(b, err)
	defer cache.Close(ctx)
	req := crRequest("a", map[string]any{"action": "echo", "name": "a"})
	s := &fakeSession{}
	start, cpu := time.Now(), cpuTime()
	for b.Loop() {
		if _, err := p.Reconcile(ctx, s, cache, req); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "reconciles/s")
	reportCPU(b, cpu, 1, "")
}

// BenchmarkReconcileWithRequests is a reconcile doing two OpenStack calls (GET 404, POST 201)
// against an in-memory session.
func BenchmarkReconcileWithRequests(b *testing.B) {
	ctx := context.Background()
	p := loadTest(b, guest(b, "pdkmock"), quietOptions(b))
	cache, err := p.NewCache(ctx)
	require.NoError(b, err)
	defer cache.Close(ctx)
	req := crRequest("a", map[string]any{"name": "a"})
	s := &nopSession{inner: &fakeSession{}}
	start, cpu := time.Now(), cpuTime()
	for b.Loop() {
		if _, err := p.Reconcile(ctx, s, cache, req); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "reconciles/s")
	reportCPU(b, cpu, 1, "")
}

// nopSession answers like fakeSession without recording, so long runs do not grow memory.
type nopSession struct{ inner *fakeSession }

func (s *nopSession) Do(ctx context.Context, req plugin.Request) (*plugin.Response, error) {
	resp, err := s.inner.Do(ctx, req)
	s.inner.Forget()
	return resp, err
}

func benchGuestLoop(b *testing.B, spec map[string]any, per int, unit string) {
	ctx := context.Background()
	p := loadTest(b, guest(b, "pdkmock"), quietOptions(b))
	cache, err := p.NewCache(ctx)
	require.NoError(b, err)
	defer cache.Close(ctx)
	req := crRequest("a", spec)
	s := &nopSession{inner: &fakeSession{}}
	start, cpu := time.Now(), cpuTime()
	for b.Loop() {
		if _, err := p.Reconcile(ctx, s, cache, req); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N*per), unit)
	reportCPU(b, cpu, per, unit)
}

// BenchmarkGuestToHostCall: each op is one reconcile making 1,000 config_get host calls.
func BenchmarkGuestToHostCall(b *testing.B) {
	benchGuestLoop(b, map[string]any{"action": "hostcalls", "count": 1000}, 1000, "ns/hostcall")
}

// BenchmarkOpenStackRequest1KB: each op is one reconcile making 100 openstack_request round
// trips with a 1 KB response body, decoded by the guest.
func BenchmarkOpenStackRequest1KB(b *testing.B) {
	benchGuestLoop(b, map[string]any{"action": "requests", "count": 100, "size": 1024}, 100, "ns/request")
}

// BenchmarkOpenStackRequest64KB: as above with a 64 KB body, 10 requests per op.
func BenchmarkOpenStackRequest64KB(b *testing.B) {
	benchGuestLoop(b, map[string]any{"action": "requests", "count": 10, "size": 65536}, 10, "ns/request")
}
