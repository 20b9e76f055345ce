package plugins

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// crdSpec is one plugin's CRD as the chart and the host expect it, derived from crds/ and the
// plugin's sources, so adding a plugin adds no row here.
type crdSpec struct {
	file, group, kind, plural, short, plugin string
	// lifecycle marks a plugin built on pdk/lifecycle: its status also holds id and resource.
	lifecycle bool
	// extraStatus are the status keys the plugin adds (Result.ExtraStatus), read from its sources.
	extraStatus []string
}

// pluginDirs are the repository's plugins: each directory of plugins-wasm/ with a main package
// and of plugins-c/ (but its headers), by plugin name.
func pluginDirs(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, pattern := range []string{repoPath("plugins-wasm", "*", "main.go"), repoPath("plugins-c", "*", "*.c")} {
		files, err := filepath.Glob(pattern)
		require.NoError(t, err)
		for _, f := range files {
			out[filepath.Base(filepath.Dir(f))] = filepath.Dir(f)
		}
	}
	require.NotEmpty(t, out)
	return out
}

// sourcesMatch reports whether any source file of a plugin matches re.
func sourcesMatch(t *testing.T, dir string, re *regexp.Regexp) bool {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), "_test.go") || !(strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), ".c")) {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		if re.Match(raw) {
			return true
		}
	}
	return false
}

// extraStatusRE finds the keys a plugin puts in Result.ExtraStatus.
var extraStatusRE = regexp.MustCompile(`ExtraStatus\s*[:=]\s*map\[string\]any\{"([A-Za-z_]+)"`)

// sourcesFind returns the first submatch of re in each of a plugin's source files.
func sourcesFind(t *testing.T, dir string, re *regexp.Regexp) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), "_test.go") || !strings.HasSuffix(e.Name(), ".go") {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		for _, m := range re.FindAllSubmatch(raw, -1) {
			out = append(out, string(m[1]))
		}
	}
	return out
}

var (
	probeRE     = regexp.MustCompile(`Probe:\s+true|\\"probe\\":true`)
	lifecycleRE = regexp.MustCompile(`"github.com/openstack-sync/openstack-sync/pdk/lifecycle"`)
)

// wantCRDs reads crds/: each CRD belongs to the plugin whose name without dashes is its plural
// (the repository's naming rule, which the demo and the chart also follow).
func wantCRDs(t *testing.T) []crdSpec {
	t.Helper()
	plugins := pluginDirs(t)
	byPlural := map[string]string{}
	for name := range plugins {
		byPlural[strings.ReplaceAll(name, "-", "")] = name
	}
	files, err := filepath.Glob(repoPath("crds", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	var out []crdSpec
	for _, f := range files {
		doc := readYAML(t, f)
		spec := dig(t, doc, "spec").(map[string]any)
		plural := dig(t, spec, "names", "plural").(string)
		c := crdSpec{file: filepath.Base(f), group: dig(t, spec, "group").(string), kind: dig(t, spec, "names", "kind").(string),
			plural: plural, plugin: byPlural[plural]}
		if shorts, ok := dig(t, spec, "names").(map[string]any)["shortNames"].([]any); ok && len(shorts) > 0 {
			c.short, _ = shorts[0].(string)
		}
		require.NotEmpty(t, c.plugin, "%s: no plugin of plugins-wasm/ or plugins-c/ is named after the plural %s", f, plural)
		c.lifecycle = sourcesMatch(t, plugins[c.plugin], lifecycleRE)
		c.extraStatus = sourcesFind(t, plugins[c.plugin], extraStatusRE)
		out = append(out, c)
	}
	return out
}

func repoPath(parts ...string) string {
	return filepath.Join(append([]string{"..", ".."}, parts...)...)
}

func readYAML(t *testing.T, path string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, yaml.Unmarshal(raw, &doc), path)
	return doc
}

// dig walks nested maps; a missing step fails the test naming the path.
func dig(t *testing.T, v any, path ...string) any {
	t.Helper()
	for i, p := range path {
		m, ok := v.(map[string]any)
		require.True(t, ok, "%s is not an object", strings.Join(path[:i], "."))
		v, ok = m[p]
		require.True(t, ok, "%s is missing", strings.Join(path[:i+1], "."))
	}
	return v
}

func keys(m any) []string {
	var out []string
	for k := range m.(map[string]any) {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Every plugin but a connectivity probe has exactly one CRD, and every CRD a plugin.
func TestCRDFilesAreExactlyThePlugins(t *testing.T) {
	crds := wantCRDs(t)
	have := map[string]bool{}
	shorts := map[string]string{}
	for _, c := range crds {
		assert.False(t, have[c.plugin], "plugin %s has two CRDs", c.plugin)
		have[c.plugin] = true
		if other, dup := shorts[c.short]; dup {
			t.Errorf("short name %s is used by %s and %s", c.short, other, c.kind)
		}
		shorts[c.short] = c.kind
	}
	for name, dir := range pluginDirs(t) {
		probe := sourcesMatch(t, dir, probeRE)
		assert.Equal(t, !probe, have[name], "plugin %s (probe: %v): a plugin that reconciles CRs has a CRD in crds/, a probe none", name, probe)
	}
}

func TestCRDs(t *testing.T) {
	for _, c := range wantCRDs(t) {
		t.Run(c.kind, func(t *testing.T) {
			doc := readYAML(t, repoPath("crds", c.file))
			assert.Equal(t, "CustomResourceDefinition", doc["kind"])
			assert.Equal(t, c.plural+"."+c.group, dig(t, doc, "metadata", "name"))
			assert.Equal(t, c.file, c.group+"_"+c.plural+".yaml", "file name is <group>_<plural>.yaml")
			spec := dig(t, doc, "spec")
			assert.Equal(t, c.group, dig(t, spec, "group"))
			assert.Equal(t, "Namespaced", dig(t, spec, "scope"))
			assert.Equal(t, c.kind, dig(t, spec, "names", "kind"))
			assert.Equal(t, c.plural, dig(t, spec, "names", "plural"))
			assert.Len(t, dig(t, spec, "names", "shortNames"), 1, "one short name, for kubectl get")

			versions := dig(t, spec, "versions").([]any)
			require.Len(t, versions, 1)
			v := versions[0]
			assert.Equal(t, "v1alpha1", dig(t, v, "name"))
			assert.Equal(t, true, dig(t, v, "storage"))
			assert.Equal(t, map[string]any{}, dig(t, v, "subresources", "status"), "the host patches the status subresource")

			var columns []string
			for _, col := range dig(t, v, "additionalPrinterColumns").([]any) {
				columns = append(columns, dig(t, col, "jsonPath").(string))
			}
			assert.Subset(t, columns, []string{".status.syncStatus", `.status.conditions[?(@.type=="Ready")].reason`, ".metadata.creationTimestamp"})

			schema := dig(t, v, "schema", "openAPIV3Schema")
			specSchema := dig(t, schema, "properties", "spec")
			// Every CR names its credentials; the rest of what is required is the plugin's (the
			// admission test refuses examples/invalid/ with the API server's own words).
			assert.Contains(t, dig(t, specSchema, "required"), "cloudCredentialsRef")
			creds := dig(t, specSchema, "properties", "cloudCredentialsRef")
			assert.ElementsMatch(t, []any{"secretName", "cloudName"}, dig(t, creds, "required"))
			for _, f := range []string{"secretName", "cloudName"} {
				assert.EqualValues(t, 1, dig(t, creds, "properties", f, "minLength"), "cloudCredentialsRef.%s", f)
			}
			checkStatusSchema(t, dig(t, schema, "properties", "status"), c.lifecycle, c.extraStatus)
			if c.lifecycle {
				props := dig(t, specSchema, "properties")
				assert.Equal(t, []any{"managed", "unmanaged"}, dig(t, props, "managementPolicy", "enum"))
				assert.ElementsMatch(t, []string{"id", "filter"}, keys(dig(t, props, "import", "properties")))
			}
		})
	}
}

// checkStatusSchema asserts every field the host writes is declared (docs/contract.md Decision 2): a field
// the schema does not declare is pruned on write, the "status is current" check never succeeds
// and the hook re-patches the status every run.
func checkStatusSchema(t *testing.T, status any, lifecycle bool, extra []string) {
	t.Helper()
	props := dig(t, status, "properties")
	want := []string{"conditions", "lastSyncTime", "message", "observedGeneration", "syncStatus"}
	if lifecycle {
		want = []string{"conditions", "id", "lastSyncTime", "message", "observedGeneration", "resource", "syncStatus"}
		assert.Equal(t, []any{"Synced", "Progressing", "Failed"}, dig(t, props, "syncStatus", "enum"))
	}
	want = append(want, extra...)
	sort.Strings(want)
	assert.Equal(t, want, keys(props), "every key the host or the plugin (ExtraStatus) writes is declared, and nothing else")
	assert.Equal(t, "integer", dig(t, props, "observedGeneration", "type"))
	conds := dig(t, props, "conditions")
	assert.Equal(t, "map", dig(t, conds, "x-kubernetes-list-type"))
	assert.Equal(t, []any{"type"}, dig(t, conds, "x-kubernetes-list-map-keys"))
	item := dig(t, conds, "items", "properties")
	assert.Equal(t, []string{"lastTransitionTime", "message", "observedGeneration", "reason", "status", "type"}, keys(item))
	_, preserve := status.(map[string]any)["x-kubernetes-preserve-unknown-fields"]
	assert.False(t, preserve, "status must be structural so undeclared fields are caught here, not silently kept")
}

func TestExamples(t *testing.T) {
	kinds := map[string]string{} // kind -> apiVersion served by crds/
	for _, c := range wantCRDs(t) {
		kinds[c.kind] = c.group + "/v1alpha1"
	}
	files, err := filepath.Glob(repoPath("examples", "*.yaml"))
	require.NoError(t, err)
	seen := map[string]bool{}
	secrets := map[string]bool{}
	for _, f := range files {
		doc := readYAML(t, f)
		kind, _ := doc["kind"].(string)
		if kind == "Secret" {
			secrets[dig(t, doc, "metadata", "name").(string)] = true
			clouds := readCloudsYAML(t, dig(t, doc, "stringData", "clouds.yaml").(string))
			assert.Subset(t, clouds, []string{"local-admin", "local-system", "local-demo"}, "the harness's cloud names")
			continue
		}
		require.Contains(t, kinds, kind, "%s: kind %s has no CRD", f, kind)
		assert.Equal(t, kinds[kind], doc["apiVersion"], f)
		seen[kind] = true
	}
	for kind := range kinds {
		assert.True(t, seen[kind], "examples/ has no %s", kind)
	}
	for _, f := range files {
		doc := readYAML(t, f)
		if doc["kind"] == "Secret" {
			continue
		}
		ref := dig(t, doc, "spec", "cloudCredentialsRef", "secretName").(string)
		assert.True(t, secrets[ref], "%s names Secret %s, which examples/ does not define", f, ref)
	}
}

func readCloudsYAML(t *testing.T, text string) []string {
	t.Helper()
	var doc struct {
		Clouds map[string]any `json:"clouds"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(text), &doc))
	return keys(doc.Clouds)
}

// invalidExample is one file of examples/invalid/ and the rejection its "# expect:" line names.
type invalidExample struct {
	path, expect string
}

func invalidExamples(t *testing.T) []invalidExample {
	t.Helper()
	files, err := filepath.Glob(repoPath("examples", "invalid", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	var out []invalidExample
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		text := string(raw)
		require.True(t, strings.HasPrefix(text, "# Rejected: "), "%s must start with a comment saying why it is rejected", f)
		var expect string
		for line := range strings.Lines(text) {
			if e, ok := strings.CutPrefix(line, "# expect: "); ok {
				expect = strings.TrimSpace(e)
			}
		}
		require.NotEmpty(t, expect, "%s needs an '# expect: <API server message>' line", f)
		out = append(out, invalidExample{path: f, expect: expect})
	}
	return out
}

func TestInvalidExamplesSayWhy(t *testing.T) { invalidExamples(t) }
