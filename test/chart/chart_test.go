// Package chart_test checks the Helm chart with the real helm binary: lint, rendering goldens,
// schema rejections, the rules the templates derive from the CRD files, and the start-up check
// script the chart runs in its init container.
package chart_test

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the goldens in testdata/golden and copy the repository's crds/ into the chart")

// repoCRDs is the repository's CRD folder, which the plugins own; the chart ships copies.
const repoCRDs = "../../crds"

func TestLintStrict(t *testing.T) {
	bin := findHelm(t)
	for _, values := range []string{"", "testdata/values/all-enabled.yaml"} {
		t.Run("values="+filepath.Base(values), func(t *testing.T) {
			args := []string{"lint", "--strict", chartDir, "--kube-version", kubeVersion}
			if values != "" {
				args = append(args, "--values", values)
			}
			out, errOut, err := helm(t, bin, args...)
			require.NoError(t, err, "helm lint --strict:\n%s%s", out, errOut)
		})
	}
}

// TestTemplateGoldens renders every testdata/values/*.yaml. A file named invalid-*.yaml must be
// rejected (by the schema or by a template check); its golden is helm's error output.
func TestTemplateGoldens(t *testing.T) {
	bin := findHelm(t)
	cases, err := filepath.Glob("testdata/values/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, cases)
	for _, values := range cases {
		name := strings.TrimSuffix(filepath.Base(values), ".yaml")
		t.Run(name, func(t *testing.T) {
			out, errOut, err := template(t, bin, values)
			invalid := strings.HasPrefix(name, "invalid-")
			golden := filepath.Join("testdata/golden", name+".yaml")
			got := out
			if invalid {
				require.Error(t, err, "helm template accepted %s:\n%s", values, out)
				golden = filepath.Join("testdata/golden", name+".txt")
				got = errOut
			} else {
				require.NoError(t, err, "helm template %s:\n%s", values, errOut)
			}
			if *update {
				require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
				return
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "no golden for %s: run go test ./test/chart -update", name)
			assert.Equal(t, string(want), got, "rendering of %s differs from %s (run with -update if intended)", values, golden)
		})
	}
}

// TestChartCRDsMatchRepository keeps the chart's crds/ identical to the repository's crds/, which
// the plugins' schemas are written in.
func TestChartCRDsMatchRepository(t *testing.T) {
	// crds/understack/ holds the original operator's CRDs (docs/migrating.md), shipped the same way.
	for _, sub := range []string{"", "understack"} {
		t.Run("crds/"+sub, func(t *testing.T) { chartCRDsMatch(t, sub) })
	}
}

func chartCRDsMatch(t *testing.T, sub string) {
	repo := crdFiles(t, filepath.Join(repoCRDs, sub))
	chart := crdFiles(t, filepath.Join(chartDir, "crds", sub))
	require.NotEmpty(t, repo, "no CRDs in %s", repoCRDs)
	if *update {
		for name := range chart {
			require.NoError(t, os.Remove(filepath.Join(chartDir, "crds", sub, name)))
		}
		for name, body := range repo {
			require.NoError(t, os.WriteFile(filepath.Join(chartDir, "crds", sub, name), body, 0o644))
		}
		return
	}
	assert.ElementsMatch(t, keys(repo), keys(chart), "the chart's crds/ holds other files than %s (go test ./test/chart -update copies them)", repoCRDs)
	for name, body := range repo {
		if c, ok := chart[name]; ok {
			assert.Equal(t, string(body), string(c), "charts/openstack-sync-operator/crds/%s drifted from crds/%s (go test ./test/chart -update copies it)", name, name)
		}
	}
}

// TestHookEnvDerivedFromCRDs recomputes, from the CRD files themselves, the identity variables the
// chart must inject for every hook (docs/contract.md §9), and the order the container lists its env in.
func TestHookEnvDerivedFromCRDs(t *testing.T) {
	bin := findHelm(t)
	out, errOut, err := template(t, bin, "testdata/values/all-enabled.yaml")
	require.NoError(t, err, errOut)
	c := container(t, deployment(t, out), "shell-operator")
	env := map[string]string{}
	var names []string
	for _, e := range c.Env {
		names = append(names, e.Name)
		env[e.Name] = e.Value
	}
	require.Equal(t, "POD_NAMESPACE", names[0], "POD_NAMESPACE comes first, from the downward API")
	require.Equal(t, "metadata.namespace", c.Env[0].ValueFrom.FieldRef.FieldPath)

	values := readValues(t, filepath.Join(chartDir, "values.yaml"))
	overrides := readValues(t, "testdata/values/all-enabled.yaml")
	minutes := map[int]bool{}
	for name, pd := range values.PluginData {
		for k, v := range overrides.PluginData[name].Hook.Env {
			pd.Hook.Env[k] = v
		}
		if pd.Hook.CRD == "" {
			continue
		}
		crd := readCRD(t, filepath.Join(chartDir, pd.Hook.CRD))
		storage, status := "", false
		for _, v := range crd.Spec.Versions {
			if v.Storage {
				storage = v.Name
			}
			if v.Subresources != nil && v.Subresources.Status != nil {
				status = true
			}
		}
		p := pd.Hook.EnvPrefix
		assert.Equal(t, crd.Spec.Group+"/"+storage, env[p+"_CRD_API_VERSION"], name)
		assert.Equal(t, crd.Spec.Names.Kind, env[p+"_CRD_KIND"], name)
		assert.Equal(t, crd.Spec.Names.Plural+"."+crd.Spec.Group, env[p+"_CRD_RESOURCE"], name)
		assert.Equal(t, fmt.Sprint(status), env[p+"_STATUS_ENABLED"], name)
		assert.Equal(t, "true", env[p+"_ENABLED"], name)
		assert.Len(t, env[p+"_PLUGIN_SHA256"], 64, name)
		assert.NotContains(t, env, p+"_PLUGIN_MEMORY_MIB", "limits are per process, exported by the wrapper")
		for k, v := range pd.Hook.Env {
			if rest, ok := strings.CutPrefix(fmt.Sprint(v), "H "); ok && k == "SYNC_CRONTAB" {
				// H is a minute of the hour derived from the binding: the plugins' periodic runs
				// spread over the hour instead of all starting at minute 0.
				minute, tail, _ := strings.Cut(env[p+"_"+k], " ")
				m, err := strconv.Atoi(minute)
				require.NoError(t, err, "%s: SYNC_CRONTAB %q", name, env[p+"_"+k])
				assert.True(t, m >= 0 && m < 60, "%s: minute %d", name, m)
				assert.Equal(t, rest, tail, name)
				assert.False(t, minutes[m], "%s: two plugins sync at minute %d", name, m)
				minutes[m] = true
				continue
			}
			assert.Equal(t, fmt.Sprint(v), env[p+"_"+k], "%s: hook env %s", name, k)
		}
	}
	// After POD_NAMESPACE and the chart's fixed variables, hook env then operator env, each sorted.
	var hookNames, opNames []string
	for _, n := range names {
		switch {
		case strings.HasPrefix(n, "IRONIC_") || strings.HasPrefix(n, "NEUTRON_") || strings.HasPrefix(n, "OPENSTACK_PROBE_"):
			hookNames = append(hookNames, n)
		case n == "LOG_LEVEL" || n == "LOG_TYPE":
			opNames = append(opNames, n)
		}
	}
	assert.True(t, sort.StringsAreSorted(hookNames), "hook env not sorted: %v", hookNames)
	assert.True(t, sort.StringsAreSorted(opNames), "operator env not sorted: %v", opNames)
}

// TestChecksumFollowsHookConfig: shell-operator reads hook configurations only at start, so any
// hook setting must change the pod template, and nothing else should.
func TestChecksumFollowsHookConfig(t *testing.T) {
	bin := findHelm(t)
	checksum := func(extra string) string {
		files := []string{"testdata/values/all-enabled.yaml"}
		if extra != "" {
			f := filepath.Join(t.TempDir(), "extra.yaml")
			require.NoError(t, os.WriteFile(f, []byte(extra), 0o644))
			files = append(files, f)
		}
		out, errOut, err := template(t, bin, files...)
		require.NoError(t, err, errOut)
		sum := deployment(t, out).Spec.Template.Annotations["checksum/openstack-sync-operator-hooks"]
		require.Len(t, sum, 64)
		return sum
	}
	base := checksum("")
	assert.NotEqual(t, base, checksum("pluginData: {neutronSegmentRanges: {hook: {env: {PRUNE: true}}}}"), "a hook env change")
	assert.NotEqual(t, base, checksum("plugins: {ironicRunbooks: false}"), "disabling a plugin")
	assert.NotEqual(t, base, checksum("pluginData: {ironicRunbooks: {plugin: {sha256: "+strings.Repeat("e", 64)+"}}}"), "a new digest pin")
	assert.NotEqual(t, base, checksum("env: {LOG_LEVEL: warn}"), "operator env")
	assert.Equal(t, base, checksum("podLabels: {team: cloud}"), "a pod label is not hook configuration")
}

// TestVerifyScript runs the init container's rendered script with sh: it must refuse a missing
// plugin and a digest that differs from the pin, and write one wrapper per enabled plugin, which
// runs the host on that plugin with the plugin's own sandbox limits.
func TestVerifyScript(t *testing.T) {
	bin := findHelm(t)
	plugins := t.TempDir()
	wasm := map[string][]byte{"ironic-runbooks": []byte("\x00asm runbooks"), "neutron-router-flavors": []byte("\x00asm flavors")}
	digest := map[string]string{}
	for n, b := range wasm {
		require.NoError(t, os.WriteFile(filepath.Join(plugins, n+".wasm"), b, 0o644))
		s := sha256.Sum256(b)
		digest[n] = hex.EncodeToString(s[:])
	}
	// The host stands in as a script that reports its limits and arguments.
	host := filepath.Join(t.TempDir(), "openstack-sync")
	require.NoError(t, os.WriteFile(host, []byte("#!/bin/sh\necho \"memory=$OPENSTACK_SYNC_WASM_MEMORY_MIB timeout=$OPENSTACK_SYNC_WASM_CALL_TIMEOUT pool=$OPENSTACK_SYNC_WASM_POOL_SIZE args=$*\"\n"), 0o755))
	render := func(flavorDigest string) []string {
		values := fmt.Sprintf(`plugins: {ironicRunbooks: true, neutronRouterFlavors: true}
pluginData:
  ironicRunbooks: {plugin: {file: %[1]s/ironic-runbooks.wasm, sha256: "%[2]s", limits: {memoryMiB: 48, callTimeout: 90s, poolSize: 3}}}
  neutronRouterFlavors: {plugin: {file: %[1]s/neutron-router-flavors.wasm, sha256: "%[3]s", limits: null}}
`, plugins, digest["ironic-runbooks"], flavorDigest)
		f := filepath.Join(t.TempDir(), "values.yaml")
		require.NoError(t, os.WriteFile(f, []byte(values), 0o644))
		out, errOut, err := template(t, bin, f)
		require.NoError(t, err, errOut)
		d := deployment(t, out)
		require.Len(t, d.Spec.Template.Spec.InitContainers, 1)
		ic := d.Spec.Template.Spec.InitContainers[0]
		return append(append([]string{}, ic.Command...), ic.Args...)
	}
	run := func(argv []string) (string, string, error) {
		hooks := t.TempDir()
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), "HOST_BINARY="+host, "HOOKS_DIR="+hooks)
		out, err := cmd.CombinedOutput()
		return hooks, string(out), err
	}

	hooks, out, err := run(render(digest["neutron-router-flavors"]))
	require.NoError(t, err, out)
	want := map[string]string{
		"ironic-runbooks":        "memory=48 timeout=90s pool=3 args=hook --plugin " + plugins + "/ironic-runbooks.wasm --env-prefix IRONIC_RUNBOOK --binding ironic-runbooks --config\n",
		"neutron-router-flavors": "memory= timeout= pool= args=hook --plugin " + plugins + "/neutron-router-flavors.wasm --env-prefix NEUTRON_ROUTER_FLAVOR --binding neutron-router-flavors --config\n",
	}
	for n, w := range want {
		wrapper := filepath.Join(hooks, n)
		st, err := os.Stat(wrapper)
		require.NoError(t, err, "wrapper for %s", n)
		assert.Equal(t, os.FileMode(0o755), st.Mode().Perm())
		cmd := exec.Command(wrapper, "--config")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		got, err := cmd.CombinedOutput()
		require.NoError(t, err, string(got))
		assert.Equal(t, w, string(got), "running the %s wrapper", n)
	}
	entries, err := os.ReadDir(hooks)
	require.NoError(t, err)
	assert.Len(t, entries, 2, "only enabled plugins get a hook")

	_, out, err = run(render(strings.Repeat("0", 64)))
	require.Error(t, err, "a digest mismatch must fail the pod")
	assert.Contains(t, out, "enabled plugin neutronRouterFlavors: "+plugins+"/neutron-router-flavors.wasm has sha256 "+digest["neutron-router-flavors"]+", the values pin "+strings.Repeat("0", 64))

	require.NoError(t, os.Remove(filepath.Join(plugins, "ironic-runbooks.wasm")))
	_, out, err = run(render(digest["neutron-router-flavors"]))
	require.Error(t, err, "a missing plugin must fail the pod")
	assert.Contains(t, out, "enabled plugin ironicRunbooks missing: "+plugins+"/ironic-runbooks.wasm")
}

type chartValues struct {
	PluginData map[string]struct {
		Hook struct {
			CRD       string         `json:"crd"`
			EnvPrefix string         `json:"envPrefix"`
			Env       map[string]any `json:"env"`
		} `json:"hook"`
	} `json:"pluginData"`
}

func readValues(t *testing.T, path string) chartValues {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var v chartValues
	require.NoError(t, yaml.Unmarshal(b, &v))
	return v
}

// crdFile holds the CRD fields the chart derives hook variables from.
type crdFile struct {
	Spec struct {
		Group string `json:"group"`
		Names struct {
			Kind   string `json:"kind"`
			Plural string `json:"plural"`
		} `json:"names"`
		Versions []struct {
			Name         string `json:"name"`
			Storage      bool   `json:"storage"`
			Subresources *struct {
				Status *map[string]any `json:"status"`
			} `json:"subresources"`
		} `json:"versions"`
	} `json:"spec"`
}

func readCRD(t *testing.T, path string) crdFile {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var crd crdFile
	require.NoError(t, yaml.Unmarshal(b, &crd), path)
	return crd
}

func crdFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	matches, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	require.NoError(t, err)
	for _, m := range matches {
		b, err := os.ReadFile(m)
		require.NoError(t, err)
		files[filepath.Base(m)] = b
	}
	return files
}

func keys(m map[string][]byte) []string {
	var k []string
	for n := range m {
		k = append(k, n)
	}
	sort.Strings(k)
	return k
}

// deployment finds the one Deployment in a helm template stream.
func deployment(t *testing.T, stream string) appsv1.Deployment {
	t.Helper()
	for _, doc := range strings.Split(stream, "\n---\n") {
		if !strings.Contains(doc, "\nkind: Deployment\n") {
			continue
		}
		var d appsv1.Deployment
		require.NoError(t, yaml.Unmarshal([]byte(doc), &d))
		return d
	}
	t.Fatalf("no Deployment in:\n%s", stream)
	return appsv1.Deployment{}
}

func container(t *testing.T, d appsv1.Deployment, name string) corev1.Container {
	t.Helper()
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no container %s", name)
	return corev1.Container{}
}

// The convergence memo is sized against the cache volume the chart mounts: whatever the volume's
// size, the number of enabled plugins and the CRs they see, every plugin's compiled files
// (compilationCache.moduleMiB), twice its run replay record and twice its memo bound (each is
// rewritten beside its old file) fit the volume, or rendering fails naming
// compilationCache.sizeLimit.
func TestTheMemoBoundFitsTheCacheVolume(t *testing.T) {
	bin := findHelm(t)
	const moduleMiB, memoMaxMiB, mib = 40, 8, 1 << 20
	plugins := []struct {
		name                        string
		memoBytesPerCR, replayPerCR int
	}{{"ironicRunbooks", 400, 400}, {"neutronRouterFlavors", 400, 16}, {"neutronSegmentRanges", 300, 16}, {"openstackProbe", 1, 1}}
	for _, crs := range []int{100, 20000} {
		for _, size := range []struct {
			limit string
			mib   int
		}{{"100Mi", 100}, {"262144Ki", 256}, {"1Gi", 1024}, {"209715200", 200}} {
			for n := 1; n <= len(plugins); n++ {
				t.Run(fmt.Sprintf("%d CRs/%s/%d plugins", crs, size.limit, n), func(t *testing.T) {
					args := []string{"--set-string", "compilationCache.sizeLimit=" + size.limit, "--set", fmt.Sprintf("memory.crs=%d", crs)}
					// The record of a plugin's last converged run: its measured bytes per CR and a
					// quarter more, at least 1 MiB and at most the host's 32 MiB.
					replayMiB, memoNeeded := 0, 0
					for i, p := range plugins[:n] {
						args = append(args, "--set", "plugins."+p.name+"=true",
							"--set", fmt.Sprintf("pluginData.%s.plugin.sha256=%064d", p.name, i+1))
						replayMiB += min(32, max(1, (crs*p.replayPerCR*5/4+mib-1)/mib))
						memoNeeded = max(memoNeeded, (crs*p.memoBytesPerCR*5/4+mib-1)/mib)
					}
					out, errOut, err := helm(t, bin, append([]string{"template", "oso", chartDir, "--kube-version", kubeVersion}, args...)...)
					left := size.mib - n*moduleMiB - 2*replayMiB
					switch {
					case left < 2*n:
						require.Error(t, err)
						assert.Contains(t, errOut, "compilationCache.sizeLimit "+size.limit+" is too small")
						return
					case memoNeeded > left/(2*n):
						require.Error(t, err)
						assert.Contains(t, errOut, fmt.Sprintf("compilationCache.sizeLimit %s leaves %d MiB for the convergence memo", size.limit, left/(2*n)))
						return
					}
					require.NoError(t, err, errOut)
					bounds := regexpAll(`OPENSTACK_SYNC_MEMO_MAX_MIB=(\d+)`, out)
					require.Len(t, bounds, n, "every enabled hook gets a memo bound")
					memos := 0
					for _, b := range bounds {
						memo, _ := strconv.Atoi(b)
						if crs == 100 {
							assert.LessOrEqual(t, memo, memoMaxMiB)
						}
						assert.GreaterOrEqual(t, memo, 1)
						memos += memo
					}
					assert.LessOrEqual(t, n*moduleMiB+2*replayMiB+2*memos, size.mib, "the hooks' files fit the volume")
				})
			}
		}
	}
}

func regexpAll(pattern, s string) []string {
	var out []string
	for _, m := range regexp.MustCompile(pattern).FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// The memo's bound follows the CRs an operator declares: memory.crs records of the plugin's
// measured size (pluginData.<name>.memoBytesPerCR) and a quarter more, at least
// compilationCache.memoMinMiB, unless compilationCache.memoMaxMiB fixes it; the hook's memory
// (its GOMEMLIMIT and the pod's limit) counts memoMemoryFactor times that bound. A bound the
// cache volume cannot hold fails rendering, naming what to raise. The run replay record's bound
// (OPENSTACK_SYNC_REPLAY_MAX_MIB) is the room the volume keeps for it.
func TestTheMemoBoundFollowsTheCRs(t *testing.T) {
	bin := findHelm(t)
	const mib = 1 << 20
	const loadMiB, poolSize, memoryMiB, overheadMiB, factor, hookPer1000, typicalMiB = 160, 2, 32, 128, 10, 11, 64
	for _, c := range []struct {
		name       string
		set        []string
		crs        int
		wantMemo   int
		wantReplay int
		wantErr    string
	}{
		{name: "the default CRs get the least bound", crs: 100, wantMemo: 4, wantReplay: 1},
		{name: "20,000 runbooks of 700 bytes", crs: 20000, set: []string{"pluginData.ironicRunbooks.memoBytesPerCR=700"},
			wantMemo: (20000*700*5/4 + mib - 1) / mib, wantReplay: (20000*400*5/4 + mib - 1) / mib},
		{name: "the chart-wide size for a plugin without its own", crs: 20000,
			set:      []string{"pluginData.ironicRunbooks.memoBytesPerCR=null", "compilationCache.memoBytesPerCR=2000"},
			wantMemo: (20000*2000*5/4 + mib - 1) / mib, wantReplay: 10},
		{name: "an explicit bound wins", crs: 20000, set: []string{"compilationCache.memoMaxMiB=6"}, wantMemo: 6, wantReplay: 10},
		{name: "an explicit bound the volume cannot hold gets the volume's share", crs: 100,
			set: []string{"compilationCache.memoMaxMiB=500"}, wantMemo: (256 - 40 - 2*1) / 2, wantReplay: 1},
		{name: "the volume's share is what the run replay record leaves", crs: 20000,
			set:      []string{"compilationCache.memoMaxMiB=500", "pluginData.ironicRunbooks.replayBytesPerCR=1000"},
			wantMemo: (256 - 40 - 2*((20000*1000*5/4+mib-1)/mib)) / 2, wantReplay: (20000*1000*5/4 + mib - 1) / mib},
		{name: "the run replay record's room is at most the host's 32 MiB", crs: 100000,
			set:      []string{"compilationCache.memoMaxMiB=6", "pluginData.ironicRunbooks.replayBytesPerCR=1000"},
			wantMemo: 6, wantReplay: 32},
		{name: "a bound the volume cannot hold fails", crs: 200000, set: []string{"pluginData.ironicRunbooks.memoBytesPerCR=700"},
			wantErr: "compilationCache.sizeLimit 256Mi leaves 76 MiB for the convergence memo of each of the 1 enabled plugins " +
				"(after their compiled code and run replay records), but memory.crs 200000 needs 167 MiB for pluginData.ironicRunbooks " +
				"(700 bytes per CR): raise compilationCache.sizeLimit to at least 438Mi, or set compilationCache.memoMaxMiB to accept " +
				"a memo that holds fewer CRs"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := []string{"template", "oso", chartDir, "--kube-version", kubeVersion, "--set", "plugins.ironicRunbooks=true",
				"--set", fmt.Sprintf("pluginData.ironicRunbooks.plugin.sha256=%064d", 1), "--set", fmt.Sprintf("memory.crs=%d", c.crs)}
			for _, s := range c.set {
				args = append(args, "--set", s)
			}
			out, errOut, err := helm(t, bin, args...)
			if c.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, errOut, c.wantErr)
				return
			}
			require.NoError(t, err, errOut)
			assert.Equal(t, []string{strconv.Itoa(c.wantMemo)}, regexpAll(`OPENSTACK_SYNC_MEMO_MAX_MIB=(\d+)`, out))
			assert.Equal(t, []string{strconv.Itoa(c.wantReplay)}, regexpAll(`OPENSTACK_SYNC_REPLAY_MAX_MIB=(\d+)`, out),
				"the run replay record's bound is the room the volume keeps for it")
			crsMiB := (hookPer1000*c.crs + 999) / 1000
			share := loadMiB + poolSize*(memoryMiB+overheadMiB) + factor*c.wantMemo + crsMiB
			assert.Equal(t, []string{strconv.Itoa(share)}, regexpAll(`GOMEMLIMIT=(\d+)MiB`, out), "the hook's memory counts the memo")
			res := container(t, deployment(t, out), "shell-operator").Resources
			soMiB := 64 + (180*c.crs+999)/1000
			assert.Equal(t, fmt.Sprintf("%dMi", soMiB+share), res.Limits.Memory().String(), "the pod's limit counts the hook's share")
			assert.Equal(t, fmt.Sprintf("%dMi", soMiB+typicalMiB+crsMiB), res.Requests.Memory().String())
		})
	}
}
