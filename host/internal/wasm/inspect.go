package wasm

import (
	"cmp"
	"context"
	"slices"

	"github.com/openstack-sync/openstack-sync/host/internal/wasm/grant"
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
	// Cleanup holds the effective policies, the framework defaults filled in.
	Cleanup struct {
		WhenPrune   string `json:"when_prune"`
		WhenNoPrune string `json:"when_no_prune"`
	} `json:"cleanup"`
	// Grants are the grants the plugin declares; an operator may narrow them at run time.
	Grants []grant.Grant `json:"grants"`

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

// Info describes the loaded module.
func (p *Plugin) Info() Info {
	m := p.declared
	if m.Grants == nil {
		m.Grants = []grant.Grant{}
	}
	info := Info{File: p.path, Size: p.size, SHA256: p.sha256, ABIVersion: m.ABIVersion, Name: m.Name,
		Noun: m.Noun, EnvPrefix: p.prefix, BindingName: m.BindingName, Version: m.Version,
		Description: m.Description, Source: m.Source, Probe: m.Probe, HasPrune: m.HasPrune, Grants: m.Grants}
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
