package wasm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/openstack-sync/openstack-sync/host/internal/wasm/admission"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm/kernel"
	"github.com/openstack-sync/openstack-sync/pdk/abi"
)

// UserModule is the import module of the openstack-sync host functions.
const UserModule = "extism:host/user"

// wasiAllowed is the WASI subset a guest may import: what the Go runtime needs to start, write
// to stdout/stderr, read clocks and randomness. No file is ever opened (no preopens), no socket
// exists, and the environment and arguments are empty.
var wasiAllowed = map[string]bool{
	"args_get": true, "args_sizes_get": true, "environ_get": true, "environ_sizes_get": true,
	"clock_time_get": true, "clock_res_get": true, "random_get": true, "poll_oneoff": true,
	"sched_yield": true, "proc_exit": true, "fd_write": true, "fd_close": true, "fd_fdstat_get": true,
	"fd_fdstat_set_flags": true, "fd_prestat_get": true, "fd_prestat_dir_name": true, "fd_seek": true,
	"fd_read": true,
}

// requiredExports must exist with type () -> i32; optionalExports may.
var (
	requiredExports = []string{abi.EntryMetadata, abi.EntryWaitForAPI, abi.EntryReconcile}
	optionalExports = []string{abi.EntryPrune, abi.EntryGroupBegin, abi.EntryGroupEnd, abi.EntryDelete, abi.EntryRemark}
)

// The compile deadline's default and its variable (Options.CompileTimeout) are admission's.
const (
	DefaultCompileTimeout = admission.DefaultCompileTimeout
	CompileTimeoutEnv     = admission.CompileTimeoutEnv
)

// LoadError is a module the host refuses to load (admission.LoadError: the admission's refusals
// are the first of them).
type LoadError = admission.LoadError

// checkDigest refuses a module whose sha256 is not the pinned one; source names where the pin
// came from, for the error.
func checkDigest(path, actual, pinned, source string) error {
	if pinned == "" {
		return nil
	}
	want := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(pinned), "sha256:"))
	if _, err := hex.DecodeString(want); err != nil || len(want) != sha256.Size*2 {
		return &LoadError{Path: path, Reason: fmt.Sprintf("%s %q is not a sha256 digest (want sha256:<64 hex digits>)", source, pinned)}
	}
	if actual != want {
		return &LoadError{Path: path, Reason: fmt.Sprintf("digest mismatch: expected sha256:%s (%s), actual sha256:%s", want, source, actual)}
	}
	return nil
}

// compileWithin compiles the module admission shaped under its compile deadline; at the deadline
// r belongs to compileWithin, which closes it once the abandoned compile returns.
func compileWithin(ctx context.Context, path string, r wazero.Runtime, b []byte, timeout time.Duration) (wazero.CompiledModule, error) {
	return admission.CompileWithin(ctx, path, timeout, func(ctx context.Context) (wazero.CompiledModule, error) {
		return r.CompileModule(ctx, b)
	}, func() { r.Close(context.Background()) })
}

// openCache returns the compilation cache, or nil (with a warning) when the directory is not
// writable: a missing cache costs a second of compile time, not correctness.
func openCache(o Options) (wazero.CompilationCache, string) {
	if o.NoCache {
		return nil, ""
	}
	dir := o.cacheDir()
	if dir == "" {
		o.Logger.Warn("no compilation cache directory could be named; compiling without a cache",
			"hint", "set "+CacheDirEnv)
		return nil, ""
	}
	if err := probeWritable(dir); err != nil {
		o.Logger.Warn("compilation cache directory is not writable; compiling without a cache",
			"dir", dir, "error", err.Error())
		return nil, ""
	}
	c, err := wazero.NewCompilationCacheWithDir(dir)
	if err != nil {
		o.Logger.Warn("cannot open the compilation cache; compiling without a cache", "dir", dir, "error", err.Error())
		return nil, ""
	}
	return c, dir
}

func probeWritable(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return err
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// runtimeConfig is the engine of every plugin runtime: compiler, memory cap, and termination on
// context end when checks is set (Plugin.terminationChecks).
func runtimeConfig(o Options, checks bool) wazero.RuntimeConfig {
	return wazero.NewRuntimeConfigCompiler().
		WithMemoryLimitPages(o.MemoryLimitPages).
		// Where linear memory cannot be mapped (withLinearMemory), reserve the limit as the
		// slice's capacity: growing in place spares the copy per memory.grow and the old buffers
		// the GC has yet to free, which made the host hold 4-5x the guest's limit
		// (docs/reliability.md, "Memory per instance").
		WithMemoryCapacityFromMax(!linearMemoryMapped).
		// The only way to stop a runaway guest inside this process; costs guest loops a check
		// each (docs/abi.md, "Limits"). Off when a supervisor stops it from outside.
		WithCloseOnContextDone(checks)
}

// newRuntime builds the runtime of one plugin: compiler engine, memory cap, termination on
// context end, WASI subset, the Extism kernel and the openstack-sync host functions.
func newRuntime(ctx context.Context, o Options, cache wazero.CompilationCache, p *Plugin, checks bool) (wazero.Runtime, error) {
	cfg := runtimeConfig(o, checks)
	if cache != nil {
		cfg = cfg.WithCompilationCache(cache)
	}
	r := wazero.NewRuntimeWithConfig(ctx, cfg)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, r); err != nil {
		r.Close(ctx)
		return nil, err
	}
	if err := kernel.Instantiate(ctx, r); err != nil {
		r.Close(ctx)
		return nil, err
	}
	if err := instantiateUser(ctx, r, p); err != nil {
		r.Close(ctx)
		return nil, err
	}
	return r, nil
}

// validate refuses a module that would not run correctly here, before any of its code runs. It
// names every problem it finds, not only the first, so an author fixes them in one round.
func validate(path string, m wazero.CompiledModule) error {
	var problems []string
	refuse := func(format string, args ...any) {
		problems = append(problems, fmt.Sprintf(format, args...))
	}
	kernelSigs := kernel.Signatures()
	for _, f := range m.ImportedFunctions() {
		mod, name, _ := f.Import()
		switch mod {
		case "wasi_snapshot_preview1":
			if !wasiAllowed[name] {
				refuse("imports %s.%s, which is outside the allowed WASI subset%s", mod, name, wasiHint(name))
			}
		case kernel.ModuleName:
			s, ok := kernelSigs[name]
			if !ok {
				refuse("imports %s.%s, which this host does not provide", mod, name)
			} else if err := sameSignature(f, s.Params, s.Results); err != nil {
				refuse("imports %s.%s with the wrong type: %v", mod, name, err)
			}
		case UserModule:
			s, ok := userSignatures[name]
			if !ok {
				refuse("imports %s.%s, which this host does not provide (it provides: %s)", mod, name,
					strings.Join(slices.Sorted(mapsKeys(userSignatures)), ", "))
			} else if err := sameSignature(f, s.Params, s.Results); err != nil {
				refuse("imports %s.%s with the wrong type: %v", mod, name, err)
			}
		default:
			refuse("imports %s.%s; only wasi_snapshot_preview1 (a subset), %s and %s are allowed",
				mod, name, kernel.ModuleName, UserModule)
		}
	}
	if len(m.ImportedMemories()) > 0 {
		mod, name, _ := m.ImportedMemories()[0].Import()
		refuse("imports memory %s.%s; a plugin must define its own memory", mod, name)
	}
	exports := m.ExportedFunctions()
	var versions []int
	for name := range exports {
		if v, ok := strings.CutPrefix(name, abi.MarkerPrefix); ok {
			if n, err := strconv.Atoi(v); err == nil {
				versions = append(versions, n)
			}
		}
	}
	if !slices.Contains(versions, abi.Version) {
		if len(versions) == 0 {
			// Language-neutral: the Go pdk exports the marker, any other language declares it.
			refuse("exports no %s<N> marker, so it is not an openstack-sync plugin: a plugin exports a "+
				"function named %s%d (docs/abi.md section 1; the Go pdk adds it for you)", abi.MarkerPrefix, abi.MarkerPrefix, abi.Version)
		} else {
			slices.Sort(versions)
			refuse("speaks ABI version %v but this host supports version %d; rebuild the plugin "+
				"for ABI v%d or upgrade the host", versions, abi.Version, abi.Version)
		}
	}
	for _, name := range requiredExports {
		f, ok := exports[name]
		if !ok {
			refuse("does not export the required entry point %q", name)
		} else if err := sameSignature(f, nil, []api.ValueType{api.ValueTypeI32}); err != nil {
			refuse("entry point %q has the wrong type: %v", name, err)
		}
	}
	for _, name := range optionalExports {
		if f, ok := exports[name]; ok {
			if err := sameSignature(f, nil, []api.ValueType{api.ValueTypeI32}); err != nil {
				refuse("entry point %q has the wrong type: %v", name, err)
			}
		}
	}
	if _, ok := exports["_start"]; ok {
		if _, ok := exports["_initialize"]; !ok {
			refuse("is a WASI command (exports _start); build it as a reactor (Go: -buildmode=c-shared; " +
				"C: -mexec-model=reactor)")
		}
	}
	if _, ok := m.ExportedMemories()["memory"]; !ok {
		refuse("does not export its memory as \"memory\"")
	}
	if len(problems) == 0 {
		return nil
	}
	return &LoadError{Path: path, Reason: strings.Join(problems, "; "), Problems: problems}
}

// wasiHint names the likely cause of a WASI import outside the subset: a guest library that
// reaches for files or sockets, which a plugin never has.
func wasiHint(name string) string {
	switch {
	case strings.HasPrefix(name, "sock_"):
		return " (sockets: something in the plugin opens network connections, in Go usually net/http or " +
			"net; a plugin reaches OpenStack only through extism:host/user.openstack_request, in Go the pdk's client)"
	case strings.HasPrefix(name, "path_") || name == "fd_readdir" || name == "fd_filestat_get" || name == "fd_pread":
		return " (file system: something in the plugin opens files, in Go usually net/http, net or crypto/x509, " +
			"which read /etc/hosts, resolv.conf and TLS roots, or os file functions; a plugin has no files and " +
			"reaches OpenStack only through extism:host/user.openstack_request, in Go the pdk's client)"
	}
	return ""
}

func sameSignature(f api.FunctionDefinition, params, results []api.ValueType) error {
	if !slices.Equal(f.ParamTypes(), params) || !slices.Equal(f.ResultTypes(), results) {
		return fmt.Errorf("have %s, want %s", sigString(f.ParamTypes(), f.ResultTypes()), sigString(params, results))
	}
	return nil
}

func sigString(params, results []api.ValueType) string {
	name := func(ts []api.ValueType) string {
		s := make([]string, len(ts))
		for i, t := range ts {
			s[i] = api.ValueTypeName(t)
		}
		return "(" + strings.Join(s, ", ") + ")"
	}
	return name(params) + " -> " + name(results)
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// pluginName is how errors name a plugin before its metadata is known.
func pluginName(path string) string {
	return strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
}

var errClosed = errors.New("plugin is closed")
