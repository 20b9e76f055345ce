package wasm

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/openstack-sync/openstack-sync/host/internal/modulecache"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm/admission"
	"github.com/openstack-sync/openstack-sync/pdk/abi"
	"github.com/openstack-sync/openstack-sync/pdk/abi/grant"
)

// Info is what a loaded module declares and is made of: `openstack-sync plugin inspect` prints
// it, and the OCI artifact's annotations are taken from it.
type Info struct {
	File   string `json:"file"`
	Size   int    `json:"size"`
	SHA256 string `json:"sha256"`

	ABIVersion  int    `json:"abi_version"`
	Name        string `json:"name"`
	Noun        string `json:"noun"`
	EnvPrefix   string `json:"env_prefix"`
	BindingName string `json:"binding_name"`
	Version     string `json:"version"`
	Description string `json:"description"`
	Source      string `json:"source"`
	Probe       bool   `json:"probe"`
	HasPrune    bool   `json:"has_prune"`
	// HasDelete: CRs being deleted go to the plugin one by one (its own delete of each CR's
	// resource). Lifecycle: it reports the shared lifecycle status (status.id, conditions).
	HasDelete bool `json:"has_delete"`
	Lifecycle bool `json:"lifecycle"`
	// PruneScope is what a set prune spares: "group" (only the CRs of its credential group) or
	// "all" (every live CR's spec).
	PruneScope string `json:"prune_scope"`
	// Cleanup holds the effective policies, the framework defaults filled in.
	Cleanup struct {
		WhenPrune   string `json:"when_prune"`
		WhenNoPrune string `json:"when_no_prune"`
	} `json:"cleanup"`
	// Grants are the grants the plugin declares; an operator may narrow them at run time.
	Grants []grant.Grant `json:"grants"`
	// Sources are the sources outside OpenStack the plugin declares it reads (docs/abi.md
	// section 8); the operator allow-lists their URLs.
	Sources []abi.SourceGrant `json:"sources,omitempty"`

	Imports []Function `json:"imports"`
	Exports []Function `json:"exports"`
}

// Function is one import or export of a module; Module is empty for exports, and a memory's
// Type is "memory".
type Function struct {
	Module string `json:"module,omitempty"`
	Name   string `json:"name"`
	Type   string `json:"type"`
}

// Inspect loads the module at path with every load-time check and returns what it declares.
func Inspect(ctx context.Context, path string, o Options) (Info, error) {
	p, err := load(ctx, path, o)
	if err != nil {
		return Info{}, err
	}
	defer p.Close(ctx)
	return p.Info(), nil
}

// InspectRecorded is Inspect without running guest code when it can be: when the module's
// metadata record exists (modulecache.ReadRecord; any earlier load through the same cache wrote it), the
// metadata is read from the record and the module is only compiled (through the compilation
// cache) and checked, never instantiated. Without a record it is Inspect, which writes one.
// recorded says which path was taken. Operator settings (Options.Grants, a digest pin) are not
// applied here: `plugin verify` checks those with Inspect.
func InspectRecorded(ctx context.Context, path string, opts Options) (info Info, recorded bool, err error) {
	o, err := opts.fromEnv()
	if err != nil {
		return Info{}, false, &LoadError{Path: path, Reason: "invalid sandbox configuration", Err: err}
	}
	dir := o.cacheDir()
	if o.NoCache || dir == "" {
		info, err = Inspect(ctx, path, opts)
		return info, false, err
	}
	digest, size, err := admission.HashModule(path)
	if err != nil {
		return Info{}, false, err
	}
	raw, m, err := readRecord(path, modulecache.Dir(dir), digest)
	if err != nil {
		if !modulecache.IsMissing(err) {
			o.Logger.Warn("ignoring an invalid metadata record; loading the module", "plugin", pluginName(path), "error", err.Error())
		}
		info, err = Inspect(ctx, path, opts)
		return info, false, err
	}
	p := &Plugin{path: path, name: m.Name, opts: o, sha256: digest.String(), digest: digest, size: int(size), declared: *m,
		log: o.Logger, metadataJSON: raw}
	defer p.Close(ctx)
	// The checks load makes before it instantiates anything, in the same order.
	module, err := admission.ReadModule(path, digest)
	if err != nil {
		return Info{}, true, err
	}
	sh, err := admission.Limit(path, module)
	wasmBytes := sh.Module
	if err != nil {
		return Info{}, true, err
	}
	p.cache, _ = openCache(o)
	if p.runtime, err = newRuntime(ctx, o, p.cache, p, !o.TrustedNoInterrupt); err != nil {
		return Info{}, true, &LoadError{Path: path, Reason: "cannot start the runtime", Err: err}
	}
	p.compiled, err = compileWithin(ctx, path, p.runtime, wasmBytes, o.CompileTimeout)
	if le, ok := err.(*LoadError); ok {
		p.runtime, p.cache = nil, nil
		return Info{}, true, le
	}
	if err != nil {
		return Info{}, true, &LoadError{Path: path, Reason: "not a valid WebAssembly module", Err: err}
	}
	if err := validate(path, p.compiled); err != nil {
		return Info{}, true, err
	}
	exports := p.compiled.ExportedFunctions()
	for entry, declared := range map[string]bool{abi.EntryPrune: m.HasPrune, abi.EntryDelete: m.HasDelete} {
		if _, ok := exports[entry]; declared && !ok {
			return Info{}, true, &LoadError{Path: path, Reason: fmt.Sprintf("metadata: declares %s but the module does not export %q", entry, entry)}
		}
	}
	p.prefix = cmp.Or(o.EnvPrefix, m.EnvPrefix)
	if p.prefix == "" {
		return Info{}, true, &LoadError{Path: path, Reason: "metadata: env_prefix is empty"}
	}
	p.whenPrune, p.whenNoPrune, _ = m.cleanupPolicies()
	return p.Info(), true, nil
}

// Info describes the loaded module.
func (p *Plugin) Info() Info {
	m := p.declared
	if m.Grants == nil {
		m.Grants = []grant.Grant{}
	}
	info := Info{File: p.path, Size: p.size, SHA256: p.sha256, ABIVersion: m.ABIVersion, Name: m.Name,
		Noun: m.Noun, EnvPrefix: p.prefix, BindingName: m.BindingName, Version: m.Version,
		Description: m.Description, Source: m.Source, Probe: m.Probe, HasPrune: m.HasPrune, HasDelete: m.HasDelete,
		Lifecycle: m.Lifecycle, PruneScope: string(cmp.Or(m.PruneScope, abi.PruneScopeAll)), Grants: m.Grants, Sources: m.Sources}
	info.Cleanup.WhenPrune, info.Cleanup.WhenNoPrune = p.whenPrune.String(), p.whenNoPrune.String()
	for _, f := range p.compiled.ImportedFunctions() {
		mod, name, _ := f.Import()
		info.Imports = append(info.Imports, Function{Module: mod, Name: name, Type: sigString(f.ParamTypes(), f.ResultTypes())})
	}
	for name, f := range p.compiled.ExportedFunctions() {
		info.Exports = append(info.Exports, Function{Name: name, Type: sigString(f.ParamTypes(), f.ResultTypes())})
	}
	for name := range p.compiled.ExportedMemories() {
		info.Exports = append(info.Exports, Function{Name: name, Type: "memory"})
	}
	byName := func(a, b Function) int { return cmp.Or(cmp.Compare(a.Module, b.Module), cmp.Compare(a.Name, b.Name)) }
	slices.SortFunc(info.Imports, byName)
	slices.SortFunc(info.Exports, byName)
	return info
}
