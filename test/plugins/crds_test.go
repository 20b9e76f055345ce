package plugins

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// crdSpec is one plugin's CRD as the chart and the host expect it.
type crdSpec struct {
	file, group, kind, plural, short string
	required                         []string
	// lifecycle marks a plugin built on pdk/lifecycle: its status also holds id and resource.
	lifecycle bool
}

var wantCRDs = []crdSpec{
	{"ironic.openstack-sync.io_ironicrunbooks.yaml", "ironic.openstack-sync.io", "IronicRunbook", "ironicrunbooks", "irb",
		[]string{"cloudCredentialsRef", "runbookName", "steps", "traits"}, false},
	{"neutron.openstack-sync.io_neutronrouterflavors.yaml", "neutron.openstack-sync.io", "NeutronRouterFlavor", "neutronrouterflavors", "nrf",
		// The flavor's fields are required by a CEL rule for a managed CR only: an unmanaged one imports.
		[]string{"cloudCredentialsRef"}, true},
	{"neutron.openstack-sync.io_neutronsegmentranges.yaml", "neutron.openstack-sync.io", "NeutronSegmentRange", "neutronsegmentranges", "nsr",
		// The range's fields are required by a CEL rule for a managed CR only: an unmanaged one imports.
		[]string{"cloudCredentialsRef"}, true},
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

func TestCRDFilesAreExactlyThePlugins(t *testing.T) {
	files, err := filepath.Glob(repoPath("crds", "*.yaml"))
	require.NoError(t, err)
	var got, want []string
	for _, f := range files {
		got = append(got, filepath.Base(f))
	}
	for _, c := range wantCRDs {
		want = append(want, c.file)
	}
	assert.ElementsMatch(t, want, got)
}

func TestCRDs(t *testing.T) {
	for _, c := range wantCRDs {
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
			assert.Equal(t, []any{c.short}, dig(t, spec, "names", "shortNames"))

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
			var required []string
			for _, r := range dig(t, specSchema, "required").([]any) {
				required = append(required, r.(string))
			}
			sort.Strings(required)
			assert.Equal(t, c.required, required)
			creds := dig(t, specSchema, "properties", "cloudCredentialsRef")
			assert.ElementsMatch(t, []any{"secretName", "cloudName"}, dig(t, creds, "required"))
			for _, f := range []string{"secretName", "cloudName"} {
				assert.EqualValues(t, 1, dig(t, creds, "properties", f, "minLength"), "cloudCredentialsRef.%s", f)
			}
			checkStatusSchema(t, dig(t, schema, "properties", "status"), c.lifecycle)
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
func checkStatusSchema(t *testing.T, status any, lifecycle bool) {
	t.Helper()
	props := dig(t, status, "properties")
	want := []string{"conditions", "lastSyncTime", "message", "observedGeneration", "syncStatus"}
	if lifecycle {
		want = []string{"conditions", "id", "lastSyncTime", "message", "observedGeneration", "resource", "syncStatus"}
		assert.Equal(t, []any{"Synced", "Progressing", "Failed"}, dig(t, props, "syncStatus", "enum"))
	}
	assert.Equal(t, want, keys(props))
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
	for _, c := range wantCRDs {
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
