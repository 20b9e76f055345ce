package demo

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/openstack-sync/openstack-sync/host/internal/fakekube"
)

// pluginSpec is one shipped plugin: its hook's env prefix and, for CR plugins, the plural of the
// CRD it reconciles (the plugin name without dashes).
type pluginSpec struct {
	Name      string
	EnvPrefix string
	Probe     bool
}

// shippedPlugins are the plugins the project builds, in the order the demo runs them.
var shippedPlugins = []pluginSpec{
	{Name: "openstack-probe", EnvPrefix: "OPENSTACK_PROBE", Probe: true},
	{Name: "neutron-router-flavors", EnvPrefix: "NEUTRON_ROUTER_FLAVOR"},
	{Name: "neutron-segment-ranges", EnvPrefix: "NEUTRON_SEGMENT_RANGE"},
	{Name: "ironic-runbooks", EnvPrefix: "IRONIC_RUNBOOK"},
}

func (p pluginSpec) plural() string { return strings.ReplaceAll(p.Name, "-", "") }

// hookSetup is everything needed to run one plugin as a hook.
type hookSetup struct {
	Plugin   pluginSpec
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
}

// hookEnv derives a hook's environment the way the chart does (spec §9.2): the CRD identity from
// the CRD, STATUS_ENABLED from its status subresource, plus PRUNE=true and short readiness
// retries, because the in-process cloud is either up or broken.
func hookEnv(p pluginSpec, r fakekube.Resource, s hookSettings) []string {
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
	for _, name := range s.Passthrough {
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	return env
}

// planHooks pairs each shipped plugin found in pluginsDir with its CRD. A CR plugin whose CRD is
// not served, or a plugin whose .wasm is missing, is left out with a note.
func planHooks(resources []fakekube.Resource, pluginsDir string, s hookSettings) ([]hookSetup, []string) {
	var hooks []hookSetup
	var notes []string
	for _, p := range shippedPlugins {
		wasm := filepath.Join(pluginsDir, p.Name+".wasm")
		if _, err := os.Stat(wasm); err != nil {
			notes = append(notes, fmt.Sprintf("plugin %s: %s not found; not run", p.Name, wasm))
			continue
		}
		h := hookSetup{Plugin: p, Wasm: wasm, Command: []string{s.Host, "hook", "--plugin", wasm}}
		if !p.Probe {
			i := slices.IndexFunc(resources, func(r fakekube.Resource) bool { return r.Plural == p.plural() })
			if i < 0 {
				notes = append(notes, fmt.Sprintf("plugin %s: no CRD with plural %q; not run", p.Name, p.plural()))
				continue
			}
			h.Resource = resources[i]
		}
		h.Env = hookEnv(p, h.Resource, s)
		hooks = append(hooks, h)
	}
	return hooks, notes
}
