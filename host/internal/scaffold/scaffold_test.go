package scaffold

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

func TestDerive(t *testing.T) {
	cases := []struct {
		o    Options
		want data
	}{
		{Options{Name: "neutron-address-scopes"}, data{Options: Options{Module: "example.org/neutron-address-scopes", Group: "example.org",
			Kind: "NeutronAddressScope", Path: "v2.0/address-scopes", Key: "address_scope"},
			Plural: "neutronaddressscopes", Singular: "neutronaddressscope", Noun: "address scope",
			EnvPrefix: "NEUTRON_ADDRESS_SCOPE", ListKey: "address_scopes"}},
		{Options{Name: "neutron-qos-policies", Group: "net.example.com"}, data{Options: Options{Module: "example.org/neutron-qos-policies",
			Group: "net.example.com", Kind: "NeutronQosPolicy", Path: "v2.0/qos-policies", Key: "qos_policy"},
			Plural: "neutronqospolicies", Singular: "neutronqospolicy", Noun: "qos policy",
			EnvPrefix: "NEUTRON_QOS_POLICY", ListKey: "qos_policies"}},
		{Options{Name: "acme-gateways", Kind: "Gateway", Path: "v2.0/gw", Key: "gateway", Module: "acme.io/gw"},
			data{Options: Options{Module: "acme.io/gw", Group: "example.org", Kind: "Gateway", Path: "v2.0/gw", Key: "gateway"},
				Plural: "acmegateways", Singular: "gateway", Noun: "gateway", EnvPrefix: "ACME_GATEWAY", ListKey: "gw"}},
	}
	for _, c := range cases {
		got, err := c.o.derive()
		require.NoError(t, err, c.o.Name)
		c.want.Name = c.o.Name
		c.want.PDK, c.want.HostModule = "./third_party/openstack-sync/pdk", "./third_party/openstack-sync"
		assert.Equal(t, c.want, got, c.o.Name)
	}
}

func TestBadOptions(t *testing.T) {
	cases := []struct {
		o    Options
		want string
	}{
		{Options{Name: "scopes"}, `plugin name "scopes": want lower-case words joined by dashes, at least two`},
		{Options{Name: "Neutron-Scopes"}, "want lower-case words"},
		{Options{Name: "neutron-scopes", Group: "example"}, `group "example" is not a DNS subdomain`},
		{Options{Name: "neutron-scopes", Kind: "scope"}, `kind "scope": want CamelCase`},
		{Options{Name: "neutron-scopes", Path: "/v2.0/scopes"}, `path "/v2.0/scopes": want a Neutron collection`},
		{Options{Name: "neutron-scopes", Key: "Scope"}, `key "Scope": want the singular body key`},
	}
	for _, c := range cases {
		_, err := Write(t.TempDir(), c.o)
		assert.ErrorContains(t, err, c.want)
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), nil, 0o644))
	_, err := Write(dir, Options{Name: "neutron-scopes"})
	assert.ErrorContains(t, err, "is not empty; plugin new writes a new module")
}

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// generate writes the module into <parent>/neutron-address-scopes with its default relative
// replace paths, and checks openstack-sync out where they point (a link to this checkout).
func generate(t *testing.T, parent string) string {
	dir := filepath.Join(parent, "neutron-address-scopes")
	files, err := Write(dir, Options{Name: "neutron-address-scopes"})
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"Makefile", "README.md", "conformance_test.go", "crd.yaml", "example.yaml", "go.mod",
		"main.go", "main_test.go", "testdata/conformance.yaml"}, files)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "third_party"), 0o755))
	root, err := filepath.Abs(repoRoot())
	require.NoError(t, err)
	require.NoError(t, os.Symlink(root, filepath.Join(dir, "third_party", "openstack-sync")))
	return dir
}

func run(t *testing.T, dir string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	// The module alone, as its own CI would build it: no go.work of this machine.
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s %v in %s:\n%s", name, args, dir, out)
	return string(out)
}

// TestGeneratedModule is what `plugin new` promises: the module as generated passes go vet, its
// unit tests and the conformance kit in the real host runtime, builds with its Makefile into a
// module whose digest does not depend on where it was built, and its CRD declares what the
// host writes.
func TestGeneratedModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and tests a generated plugin module")
	}
	a := generate(t, filepath.Join(t.TempDir(), "alice", "src"))
	run(t, a, "go", "mod", "tidy")
	run(t, a, "go", "vet", "./...")
	out := run(t, a, "go", "test", "-count=1", "-v", "./...")
	for _, want := range []string{"--- PASS: TestReconcileCreatesThenConverges", "--- PASS: TestPruneDeletesOnlyMarkedUnclaimed",
		"--- PASS: TestConformance/converge", "--- PASS: TestConformance/cleanup", "--- PASS: TestConformance/grants",
		"--- PASS: TestConformance/bad_specs"} {
		assert.Contains(t, out, want)
	}
	run(t, a, "make", "build")
	wa, err := os.ReadFile(filepath.Join(a, "neutron-address-scopes.wasm"))
	require.NoError(t, err)
	assert.False(t, bytes.Contains(wa, []byte(a)), "the module embeds the path it was built in")

	b := generate(t, filepath.Join(t.TempDir(), "ci"))
	require.NoError(t, os.WriteFile(filepath.Join(b, "go.sum"), mustRead(t, filepath.Join(a, "go.sum")), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(b, "go.mod"), mustRead(t, filepath.Join(a, "go.mod")), 0o644))
	run(t, b, "make", "build")
	assert.Equal(t, digest(wa), digest(mustRead(t, filepath.Join(b, "neutron-address-scopes.wasm"))),
		"the same generated module built in two places differs")

	var crd struct {
		Spec struct {
			Names    struct{ Kind, Plural string }
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema struct {
						Properties map[string]struct {
							Properties map[string]any
						}
					}
				}
			}
		}
	}
	require.NoError(t, yaml.Unmarshal(mustRead(t, filepath.Join(a, "crd.yaml")), &crd))
	assert.Equal(t, "neutronaddressscopes", crd.Spec.Names.Plural, "the plural is the plugin name without dashes")
	status := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"].Properties
	for _, f := range []string{"syncStatus", "lastSyncTime", "message", "observedGeneration", "conditions", "id"} {
		assert.Contains(t, status, f, "status.%s", f)
	}
	var example struct{ APIVersion, Kind string }
	require.NoError(t, yaml.Unmarshal(mustRead(t, filepath.Join(a, "example.yaml")), &example))
	assert.Equal(t, crd.Spec.Names.Kind, example.Kind)
}

func mustRead(t *testing.T, path string) []byte {
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
