// Package wasm loads sandboxed plugin modules and adapts them to plugin.Plugin, so the runner
// cannot tell a wasm plugin from a Go one. A module speaks the Extism guest ABI (any Extism PDK,
// usually ours in pdk/) plus the openstack-sync entry points of docs/abi.md; the host side of
// Extism is implemented natively in package kernel, and OpenStack requests go through the
// openstack_request host function to the plugin.Session of the current call, inside the plugin's
// effective grant.
package wasm

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/openstack-sync/openstack-sync/host/internal/memo"
	"github.com/openstack-sync/openstack-sync/host/internal/metrics"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/pdk/abi/grant"
)

// Defaults for Options' zero values (docs/abi.md, "Limits").
const (
	DefaultMemoryLimitPages  = 512 // 32 MiB: a Go guest settles near 8 MiB
	DefaultCallTimeout       = 60 * time.Second
	DefaultPoolSize          = 2 // one instance pinned to a credential group plus one for other calls
	DefaultMaxInputBytes     = 8 << 20
	DefaultMaxOutputBytes    = 1 << 20
	DefaultKernelMemoryBytes = 64 << 20
	DefaultMaxVarBytes       = 1 << 20
	// outputCaptureBytes bounds what a guest's stdout and stderr can make the host hold per call.
	outputCaptureBytes = 64 << 10
)

// DigestEnvSuffix completes <PREFIX> into the variable holding the module's pinned sha256.
const DigestEnvSuffix = "_PLUGIN_SHA256"

// CacheDirEnv names the variable that sets the compilation cache directory; CacheOff as its value
// turns the cache off (Options.NoCache): every run compiles, and nothing persists between runs.
const (
	CacheDirEnv = "OPENSTACK_SYNC_CACHE_DIR"
	CacheOff    = "off"
)

// Options configure Load. The zero value is usable.
type Options struct {
	// CacheDir is the compilation cache directory. Empty means $OPENSTACK_SYNC_CACHE_DIR, else
	// $XDG_CACHE_HOME/openstack-sync/wazero, else ~/.cache/openstack-sync/wazero. When the
	// directory cannot be written, Load warns and compiles without a cache.
	CacheDir string
	// NoCache disables the compilation cache.
	NoCache bool
	// Digest, when set, is the module's expected sha256 ("sha256:<hex>" or "<hex>"); a module
	// with another digest is refused. When empty, the variable <PREFIX>_PLUGIN_SHA256 (which the
	// chart sets) is used: read before any guest code runs when EnvPrefix is given, else right
	// after the sandboxed metadata call has named the prefix, before anything else.
	Digest string
	// EnvPrefix overrides the plugin's own env prefix.
	EnvPrefix string
	// LookupEnv reads one environment variable; default os.LookupEnv. The plugin's config_get of
	// KEY reads <PREFIX>_KEY through it, so nothing outside its prefix can reach the plugin.
	LookupEnv func(string) (string, bool)
	// Grants, when non-nil, is the operator's narrowing of the plugin's declared grants and
	// overrides <PREFIX>_GRANTS.
	Grants []grant.Grant
	// MemoryLimitPages caps each instance's linear memory in 64 KiB pages.
	MemoryLimitPages uint32
	// CallTimeout bounds one entry point call, OpenStack requests included.
	CallTimeout time.Duration
	// CompileTimeout bounds compiling the module (docs/reliability.md, "Bounded compile").
	// Default DefaultCompileTimeout.
	CompileTimeout time.Duration
	// PoolSize is the most instances alive at once; at least Concurrency.
	PoolSize int
	// Concurrency is how many instances may reconcile one credential group's CRs at once, each
	// pinned to the group and used by one goroutine (plugin.Concurrent). Default 1.
	Concurrency int
	// MaxInputBytes, MaxOutputBytes bound what crosses into and out of the guest per call.
	MaxInputBytes, MaxOutputBytes int
	// KernelMemoryBytes bounds the host-side Extism memory of one instance during one call.
	KernelMemoryBytes int
	// Metrics counts compile time and sandbox refusals; nil records nothing.
	Metrics metrics.Recorder
	// TrustedNoInterrupt turns off wazero's termination checks (WithCloseOnContextDone): guest
	// code runs several times faster, but a runaway loop can no longer be stopped and CallTimeout
	// only bounds host functions. Only for first-party plugins whose loops are known to end.
	TrustedNoInterrupt bool
	// Watch, when set, turns termination checks off like TrustedNoInterrupt and is told when
	// guest code starts and stops running, so that something outside this process can stop a
	// guest past its deadline (Go cannot preempt wazero's compiled code, so nothing inside the
	// process can; host/internal/supervise kills the hook process). A module that overran a
	// deadline before (MarkOverrun) runs with the checks on all the same.
	Watch Watch
	// Memo turns the convergence memo on (docs/abi.md, "The convergence memo"): a plugin that
	// asks may skip the reconcile of a CR whose input and evidence are what a successful,
	// write-free reconcile last saw, and the host reports that reconcile's result. The records
	// live in the compilation cache directory; without one the memo stays off.
	Memo bool
	// KnownMetadata, when set, is called with the plugin's metadata as soon as Load knows it
	// without the guest: from the metadata record of a module this node loaded before, before the
	// module is compiled. The caller may prepare work that needs only the metadata (the hook
	// connects to OpenStack) while the compile runs. It is a hint: the module may still be
	// refused, and Plugin.Metadata is what counts.
	KnownMetadata func(plugin.Metadata)
	// MemoDir is where the memo's records live; default the memo folder of the compilation cache
	// directory.
	MemoDir string
	// MemoMaxAge is the oldest record that may stand in for a full reconcile; default
	// memo.DefaultMaxAge, or $OPENSTACK_SYNC_MEMO_MAX_AGE ("0" turns the memo off).
	MemoMaxAge time.Duration
	// MemoMaxBytes bounds the plugin's records in the cache directory; default
	// memo.DefaultMaxBytes, or $OPENSTACK_SYNC_MEMO_MAX_MIB.
	MemoMaxBytes int
	// Now is the clock the memo dates and ages its records by; time.Now when nil.
	Now func() time.Time
	// Environ lists the environment, for the memo's digest of the plugin's configuration (every
	// <PREFIX>_* variable); default os.Environ.
	Environ func() []string
	// Logger receives the plugin's log lines and the host's; default slog.Default().
	Logger *slog.Logger
}

// Variables an operator sets to tune the sandbox without rebuilding the command; an Options
// field that is set wins over its variable.
const (
	EnvMemoryMiB          = "OPENSTACK_SYNC_WASM_MEMORY_MIB"
	EnvCallTimeout        = "OPENSTACK_SYNC_WASM_CALL_TIMEOUT"
	EnvPoolSize           = "OPENSTACK_SYNC_WASM_POOL_SIZE"
	EnvTrustedNoInterrupt = "OPENSTACK_SYNC_WASM_TRUSTED_NO_INTERRUPT"
	EnvConcurrency        = "OPENSTACK_SYNC_WASM_CONCURRENCY"
)

// DefaultConcurrency is one instance per credential group: docs/benchmarks.md shows what more
// buys against a cloud with real latency and what it costs in memory.
const DefaultConcurrency = 1

// fromEnv fills unset limits from the operator's variables. A malformed value is an error naming
// the variable (docs/contract.md Decision 6), never silently the default.
func (o Options) fromEnv() (Options, error) {
	if o.LookupEnv == nil {
		o.LookupEnv = os.LookupEnv
	}
	if v, ok := o.LookupEnv(CacheDirEnv); ok && strings.TrimSpace(v) == CacheOff && o.CacheDir == "" {
		o.NoCache = true
	}
	if v, ok := o.LookupEnv(EnvMemoryMiB); ok && o.MemoryLimitPages == 0 {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 4 || n > 4096 {
			return o, fmt.Errorf("%s must be an integer number of MiB between 4 and 4096, got %q", EnvMemoryMiB, v)
		}
		o.MemoryLimitPages = uint32(n * 16)
	}
	if v, ok := o.LookupEnv(EnvCallTimeout); ok && o.CallTimeout == 0 {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d <= 0 {
			return o, fmt.Errorf("%s must be a positive duration such as 30s or 2m, got %q", EnvCallTimeout, v)
		}
		o.CallTimeout = d
	}
	if v, ok := o.LookupEnv(CompileTimeoutEnv); ok && o.CompileTimeout == 0 {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d <= 0 {
			return o, fmt.Errorf("%s must be a positive duration such as 30s or 5m, got %q", CompileTimeoutEnv, v)
		}
		o.CompileTimeout = d
	}
	if v, ok := o.LookupEnv(EnvPoolSize); ok && o.PoolSize == 0 {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 || n > 64 {
			return o, fmt.Errorf("%s must be an integer between 1 and 64, got %q", EnvPoolSize, v)
		}
		o.PoolSize = n
	}
	if v, ok := o.LookupEnv(EnvConcurrency); ok && o.Concurrency == 0 {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 || n > 16 {
			return o, fmt.Errorf("%s must be an integer between 1 and 16, got %q", EnvConcurrency, v)
		}
		o.Concurrency = n
	}
	if v, ok := o.LookupEnv(memo.MaxAgeEnv); ok && o.MemoMaxAge == 0 {
		// Off is negative, so the zero value keeps meaning "the default".
		d := time.Duration(-1)
		if t := strings.TrimSpace(v); t != "0" {
			var err error
			if d, err = time.ParseDuration(t); err != nil || d <= 0 {
				return o, fmt.Errorf("%s must be a positive duration such as 24h, or 0 to turn the memo off, got %q", memo.MaxAgeEnv, v)
			}
		}
		o.MemoMaxAge = d
	}
	if v, ok := o.LookupEnv(memo.MaxMiBEnv); ok && o.MemoMaxBytes == 0 {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 || n > 1024 {
			return o, fmt.Errorf("%s must be an integer number of MiB between 1 and 1024, got %q", memo.MaxMiBEnv, v)
		}
		o.MemoMaxBytes = n << 20
	}
	if v, ok := o.LookupEnv(EnvTrustedNoInterrupt); ok && !o.TrustedNoInterrupt {
		switch v {
		case "true":
			o.TrustedNoInterrupt = true
		case "false":
		default:
			return o, fmt.Errorf("%s must be true or false", EnvTrustedNoInterrupt)
		}
	}
	return o.withDefaults(), nil
}

func (o Options) withDefaults() Options {
	if o.LookupEnv == nil {
		o.LookupEnv = os.LookupEnv
	}
	if o.MemoryLimitPages == 0 {
		o.MemoryLimitPages = DefaultMemoryLimitPages
	}
	if o.CallTimeout == 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.CompileTimeout == 0 {
		o.CompileTimeout = DefaultCompileTimeout
	}
	if o.PoolSize <= 0 {
		o.PoolSize = DefaultPoolSize
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	// Readiness and prune calls never overlap the reconciles, so one instance per concurrent
	// reconcile is enough.
	o.PoolSize = max(o.PoolSize, o.Concurrency)
	if o.MaxInputBytes == 0 {
		o.MaxInputBytes = DefaultMaxInputBytes
	}
	if o.MaxOutputBytes == 0 {
		o.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if o.KernelMemoryBytes == 0 {
		o.KernelMemoryBytes = DefaultKernelMemoryBytes
	}
	if o.MemoMaxAge == 0 {
		o.MemoMaxAge = memo.DefaultMaxAge
	}
	if o.MemoMaxBytes <= 0 {
		o.MemoMaxBytes = memo.DefaultMaxBytes
	}
	if o.Environ == nil {
		o.Environ = os.Environ
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// cacheDir resolves the compilation cache directory ("" when none can be named).
func (o Options) cacheDir() string {
	if o.CacheDir != "" {
		return o.CacheDir
	}
	if v, ok := o.LookupEnv(CacheDirEnv); ok && v != "" {
		if strings.TrimSpace(v) == CacheOff {
			// "off" names no directory: every caller (MarkOverrun too) keeps nothing, rather
			// than a folder called "off" in whatever directory the hook runs in.
			return ""
		}
		return v
	}
	if v, ok := o.LookupEnv("XDG_CACHE_HOME"); ok && v != "" {
		return filepath.Join(v, "openstack-sync", "wazero")
	}
	if v, ok := o.LookupEnv("HOME"); ok && v != "" {
		return filepath.Join(v, ".cache", "openstack-sync", "wazero")
	}
	return ""
}
