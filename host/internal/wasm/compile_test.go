package wasm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/wasm/admission"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm/wasmtest"
)

// A module within the per-function limits can still take long in all (many functions at the
// limit); the compile deadline ends the load with an error naming the module and the knob.
func TestCompileDeadlineNamesTheModule(t *testing.T) {
	m := wasmtest.Module{Memory: true, Exports: wasmtest.EntryPoints()}
	for i := range 64 {
		m.Exports = append(m.Exports, wasmtest.Func{Name: fmt.Sprint("slow", i), Body: wasmtest.NestedBlocks(admission.MaxNesting)})
	}
	path := filepath.Join(t.TempDir(), "slow.wasm")
	require.NoError(t, os.WriteFile(path, m.Encode(), 0o644))
	for _, cached := range []bool{false, true} {
		o, _ := testOptions(t)
		o.NoCache, o.CacheDir = !cached, t.TempDir()
		o.CompileTimeout = 200 * time.Millisecond
		start := time.Now()
		_, err := Load(context.Background(), path, o)
		var le *LoadError
		require.ErrorAs(t, err, &le)
		assert.Contains(t, err.Error(), "wasm plugin "+path+": compiling took longer than 200ms")
		assert.Contains(t, err.Error(), CompileTimeoutEnv)
		t.Logf("with cache %v: gave up after %v", cached, time.Since(start))
	}
}

// A compile the caller stops (the hook on SIGTERM) says so, not that it ran out of time.
func TestAStoppedCompileSaysSo(t *testing.T) {
	m := wasmtest.Module{Memory: true, Exports: wasmtest.EntryPoints()}
	for i := range 64 {
		m.Exports = append(m.Exports, wasmtest.Func{Name: fmt.Sprint("slow", i), Body: wasmtest.NestedBlocks(admission.MaxNesting)})
	}
	path := filepath.Join(t.TempDir(), "slow.wasm")
	require.NoError(t, os.WriteFile(path, m.Encode(), 0o644))
	o, _ := testOptions(t)
	o.NoCache = true
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := Load(ctx, path, o)
	var le *LoadError
	require.ErrorAs(t, err, &le)
	assert.Contains(t, err.Error(), "wasm plugin "+path+": compiling was stopped: context deadline exceeded")
	assert.NotContains(t, err.Error(), CompileTimeoutEnv)
}
