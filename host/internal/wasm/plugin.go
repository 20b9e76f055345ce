package wasm

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"

	"github.com/openstack-sync/openstack-sync/host/internal/metrics"
	"github.com/openstack-sync/openstack-sync/host/internal/modulecache"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/profile"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm/admission"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm/kernel"
	"github.com/openstack-sync/openstack-sync/pdk/abi"
	"github.com/openstack-sync/openstack-sync/pdk/abi/grant"
)

// Plugin is a loaded wasm module behind plugin.Plugin. Like every plugin.Plugin it expects one
// method call at a time; its instance pool still never lets two goroutines share an instance.
type Plugin struct {
	path string
	name string
	opts Options
	log  *slog.Logger

	cache    wazero.CompilationCache
	runtime  wazero.Runtime
	compiled wazero.CompiledModule
	pool     *pool
	nextID   atomic.Uint64

	meta                   plugin.Metadata
	declared               metadataMessage // as the module declared it, for Info
	sha256                 string
	size                   int
	whenPrune, whenNoPrune plugin.CleanupPolicy
	hasPrune, hasGroup     bool
	grants                 grant.Set
	// sourceGrants are the sources outside OpenStack the plugin declares (source.go).
	sourceGrants grant.Set
	// prefix is the env prefix; set once the metadata is read, before any call that reads config.
	prefix   string
	logLevel int32
	// metadataJSON is what the guest's metadata entry returned, for the metadata record.
	metadataJSON []byte
	// external runs the plugin's instances outside the sandbox (LoadExternal, benchmarks
	// only), else nil.
	external External
	// memo is the convergence memo's records (memo.go); nil when it is off.
	memo *memoStore
	// memoMissed is the memo's misses, kept when Close drops the store.
	memoMissed int
	// data is what each instance's memory starts with that the module no longer carries
	// (liftable); the zero value when the module kept its data section.
	data modulecache.Lifted
	// digest is the module's sha256 (sha256 in hex).
	digest modulecache.Digest
	// unverified is set while the metadata taken from the module's record has not yet been
	// compared with the guest's own answer (verifyRecord).
	unverified atomic.Bool
}

var _ plugin.Plugin = (*Plugin)(nil)

// Load reads, verifies, validates and compiles the module at path, starts one instance and reads
// the plugin's metadata. Every refusal is a *LoadError naming the file and the reason. The
// result is a *Plugin.
func Load(ctx context.Context, path string, opts Options) (plugin.Plugin, error) {
	p, err := load(ctx, path, opts)
	if err != nil {
		return nil, err
	}
	return p, nil
}

func load(ctx context.Context, path string, opts Options) (*Plugin, error) {
	o, err := opts.fromEnv()
	if err != nil {
		return nil, &LoadError{Path: path, Reason: "invalid sandbox configuration", Err: err}
	}
	digest, size, err := admission.HashModule(path)
	if err != nil {
		return nil, err
	}
	digestChecked := false
	switch {
	case o.Digest != "":
		err, digestChecked = checkDigest(path, digest.String(), o.Digest, "configured digest"), true
	case o.EnvPrefix != "":
		if pin, ok := o.LookupEnv(o.EnvPrefix + DigestEnvSuffix); ok {
			err, digestChecked = checkDigest(path, digest.String(), pin, o.EnvPrefix+DigestEnvSuffix), true
		}
	}
	if err != nil {
		return nil, err
	}
	p, err := loadDigest(ctx, path, o, digest, int(size), digestChecked, true)
	var cached *errCachedShape
	if errors.As(err, &cached) {
		// The cached files passed the cache's check but are not what this module makes: they
		// are removed, and the module is loaded from its own bytes.
		log := o.Logger.With("plugin", pluginName(path))
		log.Warn("ignoring the cached files of the module: they are not what it makes; loading it afresh",
			"error", cached.err.Error())
		cached.cache.ForgetShaped(digest)
		cached.cache.ForgetRecord(digest)
		p, err = loadDigest(ctx, path, o, digest, int(size), digestChecked, false)
	}
	return p, err
}

// errCachedShape is a load that failed on what it took from the cache (the record, the shaped
// module or its data) although the cache's check passed them: load tries again without them.
type errCachedShape struct {
	cache modulecache.Dir
	err   error
}

func (e *errCachedShape) Error() string { return e.err.Error() }

// loadDigest loads the module of digest at path, with its cached record and shape when useCache
// allows and they exist.
func loadDigest(ctx context.Context, path string, o Options, digest modulecache.Digest, size int, digestChecked, useCache bool) (*Plugin, error) {
	p := &Plugin{path: path, name: pluginName(path), opts: o,
		logLevel: extismLevel(ctx, o.Logger)}
	p.log = o.Logger.With("plugin", p.name)
	p.sha256, p.digest, p.size = digest.String(), digest, size
	var cacheDir string
	p.cache, cacheDir = openCache(o)
	cache := modulecache.Dir(cacheDir)
	// This node has loaded these exact bytes before when their metadata record exists: the
	// guest need not be asked again, and the bodies passed the compile guard's walk then.
	var record []byte
	var recorded *metadataMessage
	if useCache {
		record, recorded = p.recordedMetadata(cache, digest)
	}
	if record != nil && o.KnownMetadata != nil {
		// As useMetadata will make it: under the hook's profile (a bad value is refused there).
		prefix := cmp.Or(o.EnvPrefix, recorded.EnvPrefix)
		if prof, err := profile.Parse(lookupOr(o.LookupEnv, prefix+"_"+profile.Variable)); err == nil {
			meta := recorded.metadata()
			meta.PrunePerGroup = recorded.pruneScopeFor(prof) == abi.PruneScopeGroup
			o.KnownMetadata(meta)
		}
	}
	// A module this node loaded before was shaped then (modulecache.MapShaped): its shaped bytes are mapped
	// from the cache, and kept mapped only until the compile has read them.
	var sh admission.Shape
	var releaseShaped func()
	if record != nil {
		sh.Module, p.data, releaseShaped = p.readShaped(cache, digest)
	}
	cachedShape := sh.Module != nil
	// fromCache wraps a failure that the cached files could have caused.
	fromCache := func(err error) error {
		if (record != nil || cachedShape) && useCache {
			return &errCachedShape{cache: cache, err: err}
		}
		return err
	}
	if cachedShape {
		defer func() { releaseShaped() }()
	} else {
		// The module's own bytes, read once into this process and hashed again: what is shaped
		// and compiled is what the pin was checked against.
		module, err := admission.ReadModule(path, digest)
		if err != nil {
			p.Close(ctx)
			return nil, err
		}
		if record == nil {
			sh, err = admission.Limit(path, module)
		} else {
			sh, err = admission.LimitCompiled(path, module)
		}
		if err != nil {
			p.Close(ctx)
			return nil, err
		}
		if sh.Data != nil {
			p.data = modulecache.HeapData(sh.Data)
		}
	}
	checks := p.terminationChecks(cache, digest)
	var err error
	p.runtime, err = newRuntime(ctx, o, p.cache, p, checks)
	if err != nil {
		p.Close(ctx)
		return nil, &LoadError{Path: path, Reason: "cannot start the runtime", Err: err}
	}
	compileStart := time.Now()
	p.compiled, err = compileWithin(ctx, path, p.runtime, sh.Module, o.CompileTimeout)
	compileTime := time.Since(compileStart)
	if cachedShape {
		if _, refused := err.(*LoadError); refused {
			// A compile abandoned at its deadline may still read the mapping: it stays mapped.
			releaseShaped = func() {}
		} else {
			releaseShaped() // the decoder copied what it keeps
		}
	}
	if le, ok := err.(*LoadError); ok {
		// The compile deadline: CompileWithin closes the runtime once the abandoned compile
		// returns, and the compilation cache (whose engine it is using) is left to the process.
		p.runtime, p.cache = nil, nil
		p.Close(ctx)
		return nil, le
	}
	if err != nil {
		p.Close(ctx)
		return nil, fromCache(&LoadError{Path: path, Reason: "not a valid WebAssembly module", Err: err})
	}
	if err := validate(path, p.compiled); err != nil {
		p.Close(ctx)
		return nil, fromCache(err)
	}
	if cachedShape {
		// The data is checked against the compiled module before any instance reads it.
		if mem, ok := p.compiled.ExportedMemories()["memory"]; !ok {
			err = errors.New("no memory for the lifted data")
		} else {
			err = p.data.Check(mem.Min())
		}
		if err != nil {
			p.Close(ctx)
			return nil, fromCache(fmt.Errorf("the cached data of the module: %w", err))
		}
	}
	exports := p.compiled.ExportedFunctions()
	_, begin := exports[abi.EntryGroupBegin]
	_, end := exports[abi.EntryGroupEnd]
	p.hasGroup = begin && end
	p.pool = newPool(o.PoolSize, o.CallTimeout, p.newInstance)

	if record != nil {
		if err = p.useMetadata(record, exports); err != nil {
			err = fromCache(err)
		}
		// The grants in force must be the module's own: the record is compared with the guest's
		// answer before the first call (verifyRecord).
		p.unverified.Store(true)
	} else {
		err = p.readMetadata(ctx, exports)
	}
	if err != nil {
		p.Close(ctx)
		return nil, err
	}
	if !digestChecked {
		if pin, ok := o.LookupEnv(p.prefix + DigestEnvSuffix); ok {
			if err := checkDigest(path, digest.String(), pin, p.prefix+DigestEnvSuffix); err != nil {
				p.Close(ctx)
				return nil, err
			}
		}
	}
	if record == nil {
		p.writeRecord(cache, digest)
	}
	if !cachedShape && p.cache != nil && p.writeShaped(cache, digest, sh) && !p.data.None() {
		// Read from the file by each instance, like every later run: not held on the heap.
		p.data = cache.Lifted(digest)
	}
	sh = admission.Shape{}
	p.memo = p.newMemo(cache)
	releaseMemory()
	// Recorded once the module has named itself, so the plugin label is its name, not its file's.
	metrics.Observe(o.Metrics, metrics.PluginCompile, compileTime.Seconds(), p.name, cacheState(p.cache != nil))
	p.log.Debug("plugin loaded", "file", path, "sha256", p.sha256, "cache_dir", cacheDir, "env_prefix", p.prefix,
		"memory_limit_pages", o.MemoryLimitPages, "call_timeout", o.CallTimeout.String(), "pool_size", o.PoolSize,
		"termination_checks", checks, "watched", o.Watch != nil, "version", p.declared.Version, "cached_shape", cachedShape)
	return p, nil
}

func (p *Plugin) readMetadata(ctx context.Context, exports map[string]api.FunctionDefinition) error {
	inst, err := p.pool.get(ctx)
	if err != nil {
		return &LoadError{Path: p.path, Reason: "cannot start an instance", Err: err}
	}
	ci := &callInfo{entry: abi.EntryMetadata, log: p.log}
	out, err := p.invoke(ctx, inst, ci, nil)
	p.pool.put(ctx, inst)
	if err != nil {
		return &LoadError{Path: p.path, Reason: "metadata failed", Err: err}
	}
	return p.useMetadata(out, exports)
}

// useMetadata checks a metadata document, the guest's answer or its record, and takes it as the
// plugin's.
func (p *Plugin) useMetadata(out []byte, exports map[string]api.FunctionDefinition) error {
	m, err := parseMetadata(p.path, out)
	if err != nil {
		return err
	}
	if _, ok := exports[abi.EntryPrune]; m.HasPrune && !ok {
		return &LoadError{Path: p.path, Reason: fmt.Sprintf("metadata: has_prune is true but the module does not export %q", abi.EntryPrune)}
	}
	p.hasPrune = m.HasPrune
	p.declared = *m
	if _, ok := exports[abi.EntryDelete]; m.HasDelete && !ok {
		return &LoadError{Path: p.path, Reason: fmt.Sprintf("metadata: has_delete is true but the module does not export %q", abi.EntryDelete)}
	}
	if _, ok := exports[abi.EntryRemark]; m.HasRemark && !ok {
		return &LoadError{Path: p.path, Reason: fmt.Sprintf("metadata: has_remark is true but the module does not export %q", abi.EntryRemark)}
	}
	p.name = m.Name
	p.log = p.opts.Logger.With("plugin", p.name)
	p.meta = m.metadata()
	p.metadataJSON = out
	prefix := m.EnvPrefix
	if p.opts.EnvPrefix != "" {
		prefix = p.opts.EnvPrefix
	}
	if prefix == "" {
		return &LoadError{Path: p.path, Reason: "metadata: env_prefix is empty"}
	}
	p.prefix = prefix
	// The cleanup policy may be the profile's own (a plugin pruning only what carries the
	// original operator's marker); the hook refuses a bad value too, naming the same variable.
	prof, err := profile.Parse(lookupOr(p.opts.LookupEnv, prefix+"_"+profile.Variable))
	if err != nil {
		return &LoadError{Path: p.path, Reason: prefix + "_" + profile.Variable + " is invalid", Err: err}
	}
	p.whenPrune, p.whenNoPrune = m.cleanupFor(prof)
	// So may the prune scope: a plugin whose own marker records the credential group prunes per
	// group, but not under a profile whose marker is the original operator's, which records none.
	p.meta.PrunePerGroup = m.pruneScopeFor(prof) == abi.PruneScopeGroup
	operator := p.opts.Grants
	if operator == nil {
		// A set but empty variable is refused, not ignored: ignoring it would leave the plugin
		// every grant it declares while the operator meant to narrow them.
		if raw, ok := p.opts.LookupEnv(prefix + "_GRANTS"); ok {
			if operator, err = grant.Parse([]byte(raw)); err != nil {
				return &LoadError{Path: p.path, Reason: prefix + "_GRANTS is invalid", Err: err}
			}
		}
	}
	p.grants = grant.NewSet(m.Grants, operator)
	sources, _ := m.sourceGrants() // checked by parseMetadata
	p.sourceGrants = grant.NewSourceSet(sources)
	return nil
}

func lookupOr(lookup func(string) (string, bool), name string) string {
	v, _ := lookup(name)
	return v
}

// parseMetadata decodes and checks a metadata document, whether it comes from the guest or from
// its record (cached.go): the same rules either way.
func parseMetadata(path string, raw []byte) (*metadataMessage, error) {
	var m metadataMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, &LoadError{Path: path, Reason: "metadata is not valid JSON", Err: err}
	}
	refuse := func(format string, args ...any) error {
		return &LoadError{Path: path, Reason: "metadata: " + fmt.Sprintf(format, args...)}
	}
	switch {
	case m.ABIVersion != abi.Version:
		return nil, refuse("abi_version is %d, this host speaks %d", m.ABIVersion, abi.Version)
	case m.Name == "":
		return nil, refuse("name is empty")
	}
	if err := m.checkNames(); err != nil {
		return nil, refuse("%v", err)
	}
	if m.HasDelete && !m.Lifecycle {
		return nil, refuse("has_delete is true but lifecycle is not: a delete reports its outcome in the lifecycle status")
	}
	if m.SkipStatus && m.Lifecycle {
		return nil, refuse("skip_status is true but so is lifecycle: a lifecycle plugin finds its resource by status.id")
	}
	if err := m.checkStatusKeys(); err != nil {
		return nil, refuse("%v", err)
	}
	if err := m.checkPruneKeys(); err != nil {
		return nil, refuse("%v", err)
	}
	if _, _, err := m.cleanupPolicies(); err != nil {
		return nil, refuse("%v", err)
	}
	scopes := map[string]abi.PruneScope{"prune_scope": m.PruneScope}
	for name, pm := range m.Profiles {
		scopes["profiles."+name+".prune_scope"] = pm.PruneScope
	}
	for _, field := range slices.Sorted(maps.Keys(scopes)) {
		switch scope := scopes[field]; {
		case scope != "" && scope != abi.PruneScopeAll && scope != abi.PruneScopeGroup:
			return nil, refuse("%s is %q; want %q, %q or absent", field, cut(string(scope)), abi.PruneScopeAll, abi.PruneScopeGroup)
		case scope == abi.PruneScopeGroup && !m.HasPrune:
			return nil, refuse("%s is %q but the plugin has no prune step", field, abi.PruneScopeGroup)
		}
	}
	if err := grant.Validate(m.Grants); err != nil {
		return nil, refuse("grants: %v", err)
	}
	if _, err := m.sourceGrants(); err != nil {
		return nil, refuse("%v", err)
	}
	return &m, nil
}

func (m *metadataMessage) metadata() plugin.Metadata {
	return plugin.Metadata{Name: m.Name, Noun: m.Noun, EnvPrefix: m.EnvPrefix, BindingName: m.BindingName, Probe: m.Probe,
		Lifecycle: m.Lifecycle, HasDelete: m.HasDelete, HasPrune: m.HasDelete && m.HasPrune,
		PrunePerGroup: m.PruneScope == abi.PruneScopeGroup, HasRemark: m.HasRemark, PruneKeys: m.PruneKeys,
		Deterministic: m.Deterministic}
}

// newInstance instantiates the compiled module with its own kernel state and output capture.
func (p *Plugin) newInstance(ctx context.Context) (*instance, error) {
	if p.external != nil {
		return p.newExternalInstance(ctx)
	}
	id := p.nextID.Add(1)
	out := &boundedBuffer{max: outputCaptureBytes}
	st := kernel.NewState(kernel.Limits{Memory: p.opts.KernelMemoryBytes, Output: p.opts.MaxOutputBytes,
		Vars: DefaultMaxVarBytes}, p.lookupConfig, p.guestLog, p.logLevel)
	cfg := wazero.NewModuleConfig().
		WithName("").
		// The guest's start runs after the host wrote the lifted data (startInstance).
		WithStartFunctions().
		WithStdout(out).
		WithStderr(out).
		// Real clocks so logs and guest-side deadlines mean something; real randomness so Go's
		// map seeds and any nonces are not predictable.
		WithSysWalltime().
		WithSysNanotime().
		WithNanosleep(guestSleep).
		WithRandSource(rand.Reader).
		WithEnv("GOMEMLIMIT", guestMemoryLimit(p.opts.MemoryLimitPages)).
		WithEnv("GOGC", GuestGCPercent)
	// Starting an instance (the guest runtime's _initialize) is bounded too, but never tighter
	// than minStartTimeout: on a loaded node a Go guest's start can take hundreds of milliseconds,
	// and a short CallTimeout is meant for the plugin's entry points, not for its runtime.
	ictx, cancel := context.WithTimeout(ctx, max(p.opts.CallTimeout, minStartTimeout))
	defer cancel()
	ictx = kernel.WithState(context.WithValue(ictx, callKey{}, &callInfo{entry: "_initialize", log: p.log}), st)
	ictx = withLinearMemory(ictx)
	wid, watched := p.watchBegin(ictx, "_initialize", nil)
	mod, err := p.runtime.InstantiateModule(ictx, p.compiled, cfg)
	if err == nil {
		mod, err = p.startInstance(ictx, mod)
	}
	p.watchEnd(wid, watched)
	if le := (*LoadError)(nil); errors.As(err, &le) {
		return nil, le // the host's own data, not the guest
	}
	if err != nil {
		text, _ := out.take()
		e := p.classify(ictx, "_initialize", err, text)
		if text != "" {
			p.log.Error("plugin wrote to stdout/stderr", "entry", "_initialize", "output", strings.TrimRight(text, "\n"))
		}
		return nil, e
	}
	inst := &instance{id: id, mod: mod, state: st, output: out, fns: map[string]api.Function{}}
	// Looking an export up allocates a call engine each time; do it once per instance.
	for _, name := range append(append([]string{}, requiredExports...), optionalExports...) {
		if f := mod.ExportedFunction(name); f != nil {
			inst.fns[name] = f
		}
	}
	if err := p.verifyRecord(ctx, inst); err != nil {
		inst.close(ctx)
		return nil, err
	}
	return inst, nil
}

// verifyRecord compares the metadata this load took from the module's record with the guest's
// own answer, on the first instance that starts, before it serves any call: the record carries
// the plugin's grants, and the cache directory it lives in is not the module (modulecache). A
// record that differs is removed with the module's other cached files, and the instance is
// refused, so every call of this run fails and the next run reads the module's own answer.
func (p *Plugin) verifyRecord(ctx context.Context, inst *instance) error {
	if !p.unverified.Load() {
		return nil
	}
	out, err := p.invoke(ctx, inst, &callInfo{entry: abi.EntryMetadata, log: p.log}, nil)
	if err != nil {
		return &LoadError{Path: p.path, Reason: "metadata failed", Err: err}
	}
	if !bytes.Equal(out, p.metadataJSON) {
		cache := modulecache.Dir(p.opts.cacheDir())
		cache.ForgetRecord(p.digest)
		cache.ForgetShaped(p.digest)
		p.log.Error("the cached metadata record differs from the module's own answer; it was removed, and no call runs "+
			"until the next run reads the module's answer", "file", cache.RecordPath(p.digest))
		return &LoadError{Path: p.path, Reason: "the cached metadata record differs from the module's own metadata; " +
			"it was removed, and the next run loads the module afresh"}
	}
	p.unverified.Store(false)
	return nil
}

// startInstance writes the lifted data into a new instance's memory and then runs the guest's
// _initialize as wazero runs a start function (closing the instance when it fails, an exit with
// code 0 being no failure), so that a module reads the same memory and fails the same way
// whether or not its data was lifted (liftable).
func (p *Plugin) startInstance(ctx context.Context, mod api.Module) (api.Module, error) {
	if err := p.data.Apply(mod.Memory()); err != nil {
		_ = mod.Close(ctx)
		what := "damaged"
		switch {
		case errors.Is(err, fs.ErrNotExist):
			what = "missing"
		case !errors.Is(err, modulecache.ErrDamaged):
			return nil, &LoadError{Path: p.path, Reason: "cannot start an instance", Err: err}
		}
		// Removed with the shaped module, so that the next run shapes the module again.
		p.data.Forget()
		return nil, &LoadError{Path: p.path, Reason: fmt.Sprintf("cannot start an instance: the cached data of the module (%s) is %s; the next run shapes the module again", p.data.Path(), what)}
	}
	start := mod.ExportedFunction("_initialize")
	if start == nil {
		return mod, nil
	}
	if _, err := start.Call(ctx); err != nil {
		_ = mod.Close(ctx)
		if exit, ok := err.(*sys.ExitError); ok {
			if exit.ExitCode() == 0 {
				return mod, nil
			}
			return nil, err
		}
		return nil, fmt.Errorf("module[] function[_initialize] failed: %w", err)
	}
	return mod, nil
}

// releaseMemory collects the garbage of loading a module and returns it to the operating
// system. Decoding and validating a 4 MB module leaves about 10 MiB of garbage that Go's heap
// would keep resident for the rest of a hook run, under the compiled code and every instance's
// memory: freed once the module is loaded, a converged single-CR run's peak RSS fell from 58-64
// to 52 MiB (docs/benchmarks.md, "Host-side costs"). Each hook run is a process of its own, so
// nothing else pays for it. It costs a fresh process ~10 ms of CPU (the scavenging, and the page
// faults when the heap grows again), so it runs once per load: a second release before the
// compile, when the module was still read onto the heap, saved no RSS since the module is mapped
// (ReadModule) and cost ~450 page faults. A forced
// collection marks the whole live heap, though: past releaseBelow (a large binding context
// already read) the garbage is a small part of the process and the marking is not, so it is
// left to the collector's own pace.
var releaseMemory = func() {
	live := []rtmetrics.Sample{{Name: "/gc/heap/live:bytes"}}
	rtmetrics.Read(live)
	if live[0].Value.Kind() == rtmetrics.KindUint64 && live[0].Value.Uint64() > releaseBelow {
		return
	}
	debug.FreeOSMemory()
}

// releaseBelow is the live heap up to which releaseMemory collects.
const releaseBelow = 16 << 20

// minStartTimeout is the least time an instance gets to start; see newInstance.
const minStartTimeout = 10 * time.Second

// sleepSlice bounds one guest sleep. With real clocks a sleep that returned at once would make a
// Go guest's time.Sleep spin on a CPU until its time has passed; sleeping in short slices lets it
// wait idle and still be stopped at its deadline between two slices, as a host function that
// slept the whole time could not be.
const sleepSlice = 10 * time.Millisecond

// guestSleep serves poll_oneoff's clock waits.
func guestSleep(ns int64) { sleep(min(time.Duration(ns), sleepSlice)) }

// sleep is time.Sleep; tests replace it to see the slices.
var sleep = time.Sleep

// lookupConfig answers config_get: KEY is the hook's <PREFIX>_KEY, and nothing else is visible.
func (p *Plugin) lookupConfig(key string) (string, bool) {
	if p.prefix == "" {
		return "", false
	}
	return p.opts.LookupEnv(p.prefix + "_" + key)
}

// guestLog writes a guest's log line, naming the plugin and, during a reconcile, the CR.
func (p *Plugin) guestLog(ctx context.Context, level int32, msg string) {
	log := p.log
	if ci := callFrom(ctx); ci != nil {
		log = ci.log
	}
	log.Log(ctx, slogLevel(level), msg, "source", "guest")
}

func slogLevel(l int32) slog.Level {
	switch l {
	case kernel.LevelTrace, kernel.LevelDebug:
		return slog.LevelDebug
	case kernel.LevelInfo:
		return slog.LevelInfo
	case kernel.LevelWarn:
		return slog.LevelWarn
	}
	return slog.LevelError
}

// extismLevel is the lowest Extism level the logger keeps, so guests skip building messages
// nobody will read.
func extismLevel(ctx context.Context, log *slog.Logger) int32 {
	for _, l := range []struct {
		extism int32
		slog   slog.Level
	}{{kernel.LevelDebug, slog.LevelDebug}, {kernel.LevelInfo, slog.LevelInfo}, {kernel.LevelWarn, slog.LevelWarn},
		{kernel.LevelError, slog.LevelError}} {
		if log.Enabled(ctx, l.slog) {
			return l.extism
		}
	}
	return kernel.LevelOff
}

// GuestGCPercent is the GOGC a Go guest's runtime is started with: a collection when its heap
// has grown by a quarter, not doubled. A wasm memory never shrinks, so what the guest's heap once
// reached stays in the hook's RSS until the instance ends: at 5,000 site-shaped runbooks (the
// group's catalog of every runbook's JSON) the hook peaked at 98 MiB with Go's default and 89 MiB
// with this, for the same CPU within the noise (docs/scaling.md). A guest may set its own with
// debug.SetGCPercent.
const GuestGCPercent = "25"

// guestMemoryLimit is the GOMEMLIMIT a Go guest's runtime is started with: the sandbox less an
// eighth (at least 4 MiB) for what the runtime does not count (the module's data, stacks). Go's
// heap goal is otherwise twice the live heap, which a guest holding a large list (every runbook of
// a project, 15 MiB for 5,000) asks for and the sandbox refuses, although a collection would have
// made room: the pass failed with "out of memory" at 5,000 runbooks (docs/benchmarks.md). The
// limit is soft: a guest whose live heap exceeds it runs out of memory at the sandbox's limit as
// before. Guests in other languages ignore the variable.
func guestMemoryLimit(pages uint32) string {
	total := uint64(pages) * 65536
	reserve := max(total/8, 4<<20)
	if total <= reserve {
		return "off"
	}
	return strconv.FormatUint(total-reserve, 10)
}
