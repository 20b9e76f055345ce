package wasm

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/tetratelabs/wazero/api"

	"github.com/openstack-sync/openstack-sync/host/internal/modulecache"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/pdk/abi"
)

// External is a plugin that runs outside the sandbox behind the same Plugin as a wasm module: the
// same pool and group pinning, metadata checks, grants, openstack_request handling, memo and
// result decoding, with instances that are not wasm instances. Its one implementation is the
// benchmark's native runner (host/internal/nativeplugin), the native limit the sandbox's cost is
// measured against (docs/benchmarks.md); an External is not contained, so the production command
// never makes one (host/internal/layering forbids it to link the runner). It is the whole seam:
// the sandbox's own code paths know nothing of native builds.
type External interface {
	// Start starts one instance; what it writes outside the calls' answers goes to stderr.
	Start(ctx context.Context, stderr io.Writer) (ExternalInstance, error)
	// MemoKey names this build of the plugin for the convergence memo in place of a module's
	// sha256; "" leaves the memo off.
	MemoKey() string
}

// ExternalInstance is one started instance of an External. Like a wasm instance it serves one
// call at a time.
type ExternalInstance interface {
	// Call runs entry with input and answers the plugin's host calls through host until the
	// plugin answers. An error the plugin reported is a *GuestError; any other error (including
	// ctx ending, when the instance must stop) discards the instance.
	Call(ctx context.Context, entry string, input []byte, host HostCalls) ([]byte, error)
	Close()
}

// GuestError is the error document a plugin reported for its call (what error_set carries).
type GuestError struct{ Raw []byte }

func (e *GuestError) Error() string { return string(e.Raw) }

// HostCalls are the host functions an ExternalInstance's plugin may call during a call, served
// exactly as a wasm guest's are.
type HostCalls interface {
	// Request is openstack_request: the request document in, the answer document out.
	Request(req []byte) []byte
	// Source is source_request, the same way.
	Source(req []byte) []byte
	// Config is config_get: the hook's <PREFIX>_KEY.
	Config(key string) (string, bool)
	// Log writes a log line at a kernel level (kernel.Level*), when the host's logger keeps it.
	Log(level int32, msg string)
	// Unchanged is the memo's unchanged call with the evidence's pieces.
	Unchanged(evidence [][]byte) (bool, error)
}

// LoadExternal loads ext, found at path, behind a Plugin: every entry point exists in a pdk
// build, and its metadata is read from a first instance as a module's is.
func LoadExternal(ctx context.Context, path string, ext External, opts Options) (plugin.Plugin, error) {
	o, err := opts.fromEnv()
	if err != nil {
		return nil, &LoadError{Path: path, Reason: "invalid sandbox configuration", Err: err}
	}
	p := &Plugin{path: path, name: pluginName(path), opts: o, external: ext, hasGroup: true,
		logLevel: extismLevel(ctx, o.Logger)}
	p.log = o.Logger.With("plugin", p.name)
	p.pool = newPool(o.PoolSize, o.CallTimeout, p.newInstance)
	if err := p.readMetadata(ctx, map[string]api.FunctionDefinition{abi.EntryPrune: nil, abi.EntryDelete: nil, abi.EntryRemark: nil}); err != nil {
		p.Close(ctx)
		return nil, err
	}
	// The memo, as a module gets it, so the native limit measures the same work; keyed by the
	// build's own name rather than a module digest.
	if key := ext.MemoKey(); key != "" && o.Memo {
		if dir := o.cacheDir(); dir != "" && probeWritable(dir) == nil {
			p.sha256 = key
			p.digest = sha256.Sum256([]byte(key))
			p.memo = p.newMemo(modulecache.Dir(dir))
		}
	}
	return p, nil
}

func (p *Plugin) newExternalInstance(ctx context.Context) (*instance, error) {
	out := &boundedBuffer{max: outputCaptureBytes}
	ext, err := p.external.Start(ctx, out)
	if err != nil {
		return nil, &LoadError{Path: p.path, Reason: "cannot start the plugin", Err: err}
	}
	return &instance{id: p.nextID.Add(1), ext: ext, output: out}, nil
}

// invokeExternal is invoke for an external instance.
func (p *Plugin) invokeExternal(ctx context.Context, inst *instance, ci *callInfo, input []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, p.opts.CallTimeout)
	defer cancel()
	out, err := inst.ext.Call(ctx, ci.entry, input, &externalHost{p: p, ctx: context.WithValue(ctx, callKey{}, ci), ci: ci})
	var guest *GuestError
	switch {
	case err == nil:
		return out, nil
	case errors.As(err, &guest):
		return nil, p.errorFrom(guest.Raw, ci.entry)
	}
	inst.broken = true
	text, _ := inst.output.take()
	e := &CallError{Plugin: p.name, Entry: ci.entry, Kind: "trap", Detail: err.Error(), Err: err}
	if ctx.Err() != nil {
		e.Kind, e.Detail = "timeout", fmt.Sprintf("did not finish within %s", p.opts.CallTimeout)
	}
	if text != "" {
		e.Detail += ": " + strings.TrimSpace(text)
	}
	return nil, e
}

// externalHost serves one call's host calls.
type externalHost struct {
	p   *Plugin
	ctx context.Context
	ci  *callInfo
}

func (h *externalHost) Request(req []byte) []byte        { return h.p.serve(h.ctx, h.ci, req) }
func (h *externalHost) Source(req []byte) []byte         { return h.p.serveSource(h.ctx, h.ci, req) }
func (h *externalHost) Config(key string) (string, bool) { return h.p.lookupConfig(key) }

func (h *externalHost) Log(level int32, msg string) {
	if level >= h.p.logLevel {
		h.p.guestLog(h.ctx, level, msg)
	}
}

func (h *externalHost) Unchanged(evidence [][]byte) (bool, error) {
	return h.p.unchanged(h.ctx, len(evidence), func(i int) []byte { return evidence[i] })
}
