package demo

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/openstack-sync/openstack-sync/host/internal/fakekube"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm"
)

// MetadataReader reads a plugin module's own metadata (name, env prefix, probe), so the demo runs
// whatever plugins the directory holds instead of a list kept by hand.
type MetadataReader func(ctx context.Context, wasmPath string) (plugin.Metadata, error)

// plural is the CRD plural a CR plugin reconciles: its name without dashes, the naming rule of
// crds/ (neutron-router-flavors reconciles neutronrouterflavors).
func plural(m plugin.Metadata) string { return strings.ReplaceAll(m.Name, "-", "") }

// hookSetup is everything needed to run one plugin as a hook.
type hookSetup struct {
	Plugin   plugin.Metadata
	Wasm     string
	Resource fakekube.Resource // zero for the probe
	Command  []string
	Env      []string
}

// hookSettings are the values the demo gives every hook, where the chart would use values.yaml.
type hookSettings struct {
	Host         string
	PodNamespace string
	// ProbeSecret and ProbeCloud are the credential the probe validates.
	ProbeSecret, ProbeCloud string
	// Passthrough is inherited from the demo's own environment when set (PATH, the wazero cache).
	Passthrough []string
	// Nautobot, when set, is allow-listed for the hooks whose CRs name it.
	Nautobot *demoNautobot
}

// hookEnv derives a hook's environment the way the chart does (docs/contract.md §9): the CRD identity from the CRD, STATUS_ENABLED from its status subresource, plus
// PRUNE=true and short readiness retries, because the in-process cloud is either up or broken.
func hookEnv(p plugin.Metadata, r fakekube.Resource, s hookSettings) []string {
	env := []string{
		"LOG_LEVEL=info",
		"POD_NAMESPACE=" + s.PodNamespace,
		p.EnvPrefix + "_ENABLED=true",
	}
	if p.Probe {
		env = append(env,
			p.EnvPrefix+"_DEFAULT_SECRET="+s.ProbeSecret,
			p.EnvPrefix+"_DEFAULT_CLOUD="+s.ProbeCloud)
	} else {
		env = append(env,
			p.EnvPrefix+"_CRD_API_VERSION="+r.APIVersion(),
			p.EnvPrefix+"_CRD_KIND="+r.Kind,
			p.EnvPrefix+"_CRD_RESOURCE="+r.ResourceName(),
			fmt.Sprintf("%s_STATUS_ENABLED=%t", p.EnvPrefix, r.StatusSubresource),
			p.EnvPrefix+"_PRUNE=true",
			p.EnvPrefix+"_SYNC_CRONTAB=0 * * * *",
			p.EnvPrefix+"_READY_RETRIES=3",
			p.EnvPrefix+"_READY_DELAY=0.2",
		)
	}
	env = append(env, s.Nautobot.env(p.EnvPrefix, r.Kind)...)
	for _, name := range s.Passthrough {
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	return env
}

// planHooks runs every module of pluginsDir, named and configured by its own metadata and paired
// with the served CRD of its plural; probes first (they validate credentials on start-up), then by
// name, so the output is the same every time. A module whose metadata cannot be read, or a CR
// plugin whose CRD is not served, is left out with a note.
func planHooks(ctx context.Context, read MetadataReader, resources []fakekube.Resource, pluginsDir string, s hookSettings) ([]hookSetup, []string, error) {
	files, err := filepath.Glob(filepath.Join(pluginsDir, "*.wasm"))
	if err != nil {
		return nil, nil, err
	}
	var hooks []hookSetup
	var notes []string
	for _, wasm := range files {
		m, err := read(ctx, wasm)
		if err != nil {
			notes = append(notes, fmt.Sprintf("%s: reading its metadata: %v; not run", wasm, err))
			continue
		}
		h := hookSetup{Plugin: m, Wasm: wasm, Command: []string{s.Host, "hook", "--plugin", wasm}}
		if !m.Probe {
			i := slices.IndexFunc(resources, func(r fakekube.Resource) bool { return r.Plural == plural(m) })
			if i < 0 {
				notes = append(notes, fmt.Sprintf("plugin %s: no CRD with plural %q; not run", m.Name, plural(m)))
				continue
			}
			h.Resource = resources[i]
		}
		h.Env = hookEnv(m, h.Resource, s)
		hooks = append(hooks, h)
	}
	slices.SortStableFunc(hooks, func(a, b hookSetup) int {
		if a.Plugin.Probe != b.Plugin.Probe {
			if a.Plugin.Probe {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.Plugin.Name, b.Plugin.Name)
	})
	return hooks, notes, nil
}

// readWasmMetadata loads the module the way a hook run does (compiled through the shared cache)
// and returns what it says about itself.
func readWasmMetadata(ctx context.Context, path string) (plugin.Metadata, error) {
	p, err := wasm.Load(ctx, path, wasm.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return plugin.Metadata{}, err
	}
	defer p.Close(ctx)
	return p.Metadata(), nil
}
