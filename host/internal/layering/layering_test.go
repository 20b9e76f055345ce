package layering

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/openstack-sync/openstack-sync/"

// pdk is the PDK's module; shared the packages of it that the host imports too.
const (
	pdk    = module + "pdk"
	shared = module + "pdk/abi"
)

// framework are the packages that hold the rules every plugin shares.
var framework = []string{
	"host/internal/bindingctx", "host/internal/events", "host/internal/finalizer", "host/internal/hook", "host/internal/hookenv",
	"host/internal/kubeapi", "host/internal/metrics", "host/internal/migrate", "host/internal/planner", "host/internal/plugin",
	"host/internal/profile", "host/internal/replay",
	"host/internal/resource", "host/internal/runner", "host/internal/status",
}

var (
	kubernetes = []string{"k8s.io/", "sigs.k8s.io/controller-runtime"}
	wazero     = []string{"github.com/tetratelabs/wazero"}
	gophercld  = []string{"github.com/gophercloud/"}
	// fakes are the in-process stand-ins and test doubles: none may reach production.
	fakes = []string{
		module + "host/internal/demo", module + "host/internal/fakecloud", module + "host/internal/fakekube",
		module + "host/internal/plugin/plugintest", module + "host/internal/kube/kubetest",
		module + "host/internal/wasm/wasmtest", "github.com/stretchr/testify",
	}
	// unsandboxed is the benchmark's native runner: a plugin it runs is not contained, so only
	// the native test host (host/cmd/openstack-sync-native) may link it.
	unsandboxed = []string{module + "host/internal/nativeplugin"}
)

func TestImportRules(t *testing.T) {
	all := []string{"host/cmd/openstack-sync", "host/internal/openstack", "host/internal/wasm", "host/internal/kube"}
	// cache are the rooms beside the sandbox that keep what persists between runs.
	cache := []string{"host/internal/memo", "host/internal/modulecache"}
	// admission decides on a module's bytes before any reach the runtime.
	admission := []string{"host/internal/wasm/admission"}
	all = append(append(all, cache...), admission...)
	graph := deps(t, append(all, framework...)...)
	tests := []struct {
		name      string
		packages  []string
		forbidden []string
	}{
		{"the framework links no Kubernetes client", framework, kubernetes},
		{"the framework links no wasm runtime", framework, wazero},
		{"the framework links no OpenStack SDK", framework, gophercld},
		{"the production binary links no fake", []string{"host/cmd/openstack-sync"}, fakes},
		{"the production binary and the framework link no unsandboxed runner",
			append([]string{"host/cmd/openstack-sync", "host/internal/wasm"}, framework...), unsandboxed},
		{"the OpenStack connector links no Kubernetes client", []string{"host/internal/openstack"}, kubernetes},
		{"the wasm host links no OpenStack SDK or Kubernetes client", []string{"host/internal/wasm"}, append(gophercld, kubernetes...)},
		{"the Kubernetes client links no wasm runtime or OpenStack SDK", []string{"host/internal/kube"}, append(wazero, gophercld...)},
		{"the module cache and the memo link no wasm runtime, OpenStack SDK or Kubernetes client", cache,
			append(append(slices.Clone(wazero), gophercld...), kubernetes...)},
		{"the admission of a module links no wasm runtime, OpenStack SDK or Kubernetes client", admission,
			append(append(slices.Clone(wazero), gophercld...), kubernetes...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, pkg := range tt.packages {
				require.NotEmpty(t, graph[pkg], pkg)
				for _, dep := range graph[pkg] {
					for _, f := range tt.forbidden {
						assert.Falsef(t, within(dep, f), "%s links %s", pkg, dep)
					}
				}
			}
		})
	}
}

// The host and the PDK share one package tree, pdk/abi (RATIONALE.md, "Where do the host and the
// PDK share code?"): the host's module requires the PDK's for it and links nothing else of it (no
// guest runtime, no go-pdk), and the shared packages import only the standard library, so both
// sides can take them without anything of the other's.
func TestTheHostAndThePDKShareOnlyTheABI(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{.Standard}}", "./host/...")
	cmd.Dir = "../../.."
	out, err := cmd.Output()
	require.NoError(t, err)
	sharedUsed := false
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg := strings.Fields(line)[0]
		if within(pkg, pdk) {
			assert.Truef(t, within(pkg, shared), "the host links %s; of the PDK it may link only %s", pkg, shared)
			sharedUsed = true
		}
		assert.Falsef(t, within(pkg, "github.com/extism/"), "the host links %s", pkg)
	}
	assert.True(t, sharedUsed, "the host uses the shared ABI package")

	cmd = exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{.Standard}}", "./abi/...")
	cmd.Dir = "../../../pdk"
	out, err = cmd.Output()
	require.NoError(t, err)
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		assert.Truef(t, f[1] == "true" || within(f[0], shared), "%s links %s, which is not the standard library", shared, f[0])
	}
}

// The PDK and the plugins never depend on the host: their modules do not require the host's.
func TestThePDKAndThePluginsNeverRequireTheHost(t *testing.T) {
	for _, dir := range []string{"pdk", "plugins-wasm"} {
		cmd := exec.Command("go", "list", "-m", "all")
		cmd.Dir = "../../../" + dir
		out, err := cmd.Output()
		require.NoError(t, err, dir)
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			assert.NotEqualf(t, strings.TrimSuffix(module, "/"), strings.Fields(line)[0], "%s requires the host's module", dir)
		}
	}
}

// The rules above would pass vacuously if go list named nothing; the wiring command must still
// reach the real parts.
func TestDepsSeesTheRealParts(t *testing.T) {
	graph := deps(t, "host/cmd/openstack-sync", "host/cmd/openstack-sync-dev")
	for _, want := range []string{module + "host/internal/runner", module + "host/internal/kube", "github.com/tetratelabs/wazero", "k8s.io/client-go/rest"} {
		assert.Contains(t, graph["host/cmd/openstack-sync"], want)
	}
	assert.Contains(t, graph["host/cmd/openstack-sync-dev"], module+"host/internal/fakecloud", "the dev binary has the fakes")
	assert.True(t, within(module+"host/internal/fakekube/shelloperator", module+"host/internal/fakekube"))
	assert.True(t, within("k8s.io/client-go/rest", "k8s.io/"))
	assert.False(t, within(module+"host/internal/democracy", module+"host/internal/demo"))
}

// within reports whether package dep is f or below it; an f ending in "/" is a path prefix.
func within(dep, f string) bool {
	if strings.HasSuffix(f, "/") {
		return strings.HasPrefix(dep, f)
	}
	return dep == f || strings.HasPrefix(dep, f+"/")
}

// deps maps each package (a path relative to the module root) to every package it links, in one
// go list call.
func deps(t *testing.T, pkgs ...string) map[string][]string {
	t.Helper()
	args := []string{"list", "-f", `{{.ImportPath}} {{join .Deps " "}}`}
	for _, p := range pkgs {
		args = append(args, "./"+p)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = "../../.."
	out, err := cmd.Output()
	require.NoError(t, err, "go %s", strings.Join(args, " "))
	graph := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		graph[strings.TrimPrefix(fields[0], module)] = fields[1:]
	}
	return graph
}
