package scaffold

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

func TestDerive(t *testing.T) {
	cases := []struct {
		o                                  Options
		collection, kind, prefix, envelope string
		ownership                          Ownership
		fields                             []string
	}{
		{Options{Name: "keystone-projects"}, "identity:projects", "KeystoneProject", "KEYSTONE_PROJECT", "project", OwnerTag,
			[]string{"name", "description", "domain_id", "enabled", "is_domain", "parent_id"}},
		{Options{Name: "neutron-address-scopes"}, "network:address-scopes", "NeutronAddressScope", "NEUTRON_ADDRESS_SCOPE",
			"address_scope", OwnerNamePrefix, []string{"name", "shared", "ip_version", "project_id"}},
		{Options{Name: "acme-tenants", Service: "keystone", Collection: "projects", Ownership: OwnerNone, Kind: "Tenant"},
			"identity:projects", "Tenant", "ACME_TENANT", "project", OwnerNone,
			[]string{"name", "description", "domain_id", "enabled", "is_domain", "parent_id"}},
		{Options{Name: "neutron-groups", Service: "network", Collection: "v2.0/address-groups"}, "network:address-groups",
			"NeutronGroup", "NEUTRON_GROUP", "address_group", OwnerDescription, []string{"name", "description", "project_id", "addresses"}},
		{Options{Name: "neutron-widgets", Path: "v2.0/widgets"}, "network:widgets", "NeutronWidget", "NEUTRON_WIDGET", "widget",
			OwnerDescription, []string{"name", "description"}},
		// Ironic: no uuid (Ironic chooses it), no description (dropped before 1.112); the owner
		// marker goes in extra.
		{Options{Name: "ironic-runbooks"}, "baremetal:runbooks", "IronicRunbook", "IRONIC_RUNBOOK", "runbook", OwnerExtra,
			[]string{"name", "steps", "disable_ramdisk", "extra", "public", "owner"}},
		{Options{Name: "acme-templates", Service: "baremetal", Collection: "deploy-templates", Ownership: OwnerNone},
			"baremetal:deploy-templates", "AcmeTemplate", "ACME_TEMPLATE", "deploy_template", OwnerNone, []string{"name", "extra", "steps"}},
	}
	for _, c := range cases {
		m, err := c.o.derive()
		require.NoError(t, err, c.o.Name)
		assert.Equal(t, c.collection, m.Collection(), c.o.Name)
		assert.Equal(t, c.kind, m.Kind, c.o.Name)
		assert.Equal(t, c.prefix, m.EnvPrefix, c.o.Name)
		assert.Equal(t, c.envelope, m.Key(), c.o.Name)
		assert.Equal(t, c.ownership, m.Ownership, c.o.Name)
		var names []string
		for _, f := range m.fields {
			names = append(names, f.JSON)
		}
		assert.Equal(t, c.fields, names, c.o.Name)
	}
}

// TestGoModFollowsTheRelease: a released binary writes a go.mod that requires the openstack-sync
// modules at its own version and replaces nothing; a binary built from a checkout, or --pdk, points
// relative replace lines at a checkout.
func TestGoModFollowsTheRelease(t *testing.T) {
	gomod := func(o Options) string {
		dir := filepath.Join(t.TempDir(), o.Name)
		_, err := Write(dir, o)
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		require.NoError(t, err)
		return string(b)
	}
	released := gomod(Options{Name: "keystone-projects", Version: "v0.3.1"})
	assert.Contains(t, released, "\tgithub.com/openstack-sync/openstack-sync v0.3.1\n\tgithub.com/openstack-sync/openstack-sync/pdk v0.3.1\n")
	assert.NotContains(t, released, "replace")
	for _, o := range []Options{{Name: "keystone-projects", Version: "(devel)"}, {Name: "keystone-projects", Version: "v0.3.1", PDK: "../pdk"}} {
		dev := gomod(o)
		assert.Contains(t, dev, "\tgithub.com/openstack-sync/openstack-sync/pdk v0.0.0\n")
		assert.Contains(t, dev, "replace github.com/openstack-sync/openstack-sync => ./third_party/openstack-sync\n")
	}
}

func TestBadOptions(t *testing.T) {
	cases := []struct {
		o    Options
		want string
	}{
		{Options{Name: "scopes"}, `plugin name "scopes": want lower-case words joined by dashes, at least two`},
		{Options{Name: "Neutron-Scopes"}, "want lower-case words"},
		{Options{Name: "acme-scopes"}, `plugin name "acme-scopes": its first word is no service (keystone, neutron, ironic); pass --service and --collection`},
		{Options{Name: "acme-scopes", Service: "compute", Collection: "servers"}, `service "compute": want identity (keystone), network (neutron)`},
		{Options{Name: "keystone-widgets"}, "identity:widgets is not a collection openstack-sync knows the rules of (it knows baremetal:deploy-templates, baremetal:runbooks, identity:domains"},
		{Options{Name: "keystone-widgets", Path: "v3/widgets"}, "--path and --key describe a Neutron collection"},
		{Options{Name: "neutron-scopes", Path: "/v2.0/scopes"}, `path "/v2.0/scopes": want a Neutron collection`},
		{Options{Name: "neutron-scopes", Path: "v2.0/scopes", Key: "Scope"}, `key "Scope": want the singular body key`},
		{Options{Name: "neutron-address-scopes", Group: "example"}, `group "example" is not a DNS subdomain`},
		{Options{Name: "neutron-address-scopes", Kind: "scope"}, `kind "scope": want CamelCase`},
		{Options{Name: "neutron-address-scopes", Ownership: OwnerTag}, "--ownership tag: network:address-scopes has no tags; use name-prefix or none"},
		{Options{Name: "neutron-address-scopes", Ownership: OwnerDescription}, "has no description it keeps; use name-prefix or none"},
		{Options{Name: "ironic-runbooks", Ownership: OwnerNamePrefix}, "--ownership name-prefix: baremetal:runbooks's names are custom traits"},
		{Options{Name: "keystone-projects", Ownership: "label"}, `--ownership "label": want tag, name-prefix, description, extra or none`},
		// A line break in what go.mod takes would write a line of its own into it.
		{Options{Name: "neutron-address-scopes", Module: "example.org/x\nreplace evil => ../evil"}, `module "example.org/x\nreplace evil => ../evil": want a Go module path`},
		{Options{Name: "neutron-address-scopes", Module: "example.org/x y"}, `module "example.org/x y": want a Go module path`},
		{Options{Name: "neutron-address-scopes", Module: "example.org/\x1b[31mx"}, `want a Go module path`},
		{Options{Name: "neutron-address-scopes", PDK: "../pdk\nrequire evil v1"}, `pdk "../pdk\nrequire evil v1": want a path without spaces`},
		{Options{Name: "neutron-address-scopes", HostModule: "../x\ty"}, `host-module "../x\ty": want a path without spaces`},
	}
	for _, c := range cases {
		_, err := Write(t.TempDir(), c.o)
		assert.ErrorContains(t, err, c.want, c.o.Name)
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), nil, 0o644))
	_, err := Write(dir, Options{Name: "neutron-address-scopes"})
	assert.ErrorContains(t, err, "is not empty; plugin new writes a new module")
}

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// generate writes the module into <parent>/<name> with its default relative replace paths, and
// checks openstack-sync out where they point (a link to this checkout).
func generate(t *testing.T, parent string, o Options) string {
	dir := filepath.Join(parent, o.Name)
	files, err := Write(dir, o)
	require.NoError(t, err)
	for _, f := range []string{"Makefile", "README.md", "conformance_test.go", "crd.yaml", "example.yaml", "example-import.yaml",
		"go.mod", "main.go", "main_test.go", "resource.go", "testdata/conformance.yaml", "examples/invalid/on-delete.yaml"} {
		assert.Contains(t, files, f)
	}
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "third_party"), 0o755))
	root, err := filepath.Abs(repoRoot())
	require.NoError(t, err)
	require.NoError(t, os.Symlink(root, filepath.Join(dir, "third_party", "openstack-sync")))
	return dir
}

func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	// The module alone, as its own CI would build it: no go.work of this machine.
	cmd.Env = append(append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod"), env...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s %v in %s:\n%s", name, args, dir, out)
	return string(out)
}

// TestGeneratedModules is what `plugin new` promises, for a collection of each service's kind
// and each ownership: the module as generated passes go vet (native and wasip1) and its unit
// tests against pdktest's stateful fake; one also passes the conformance kit in the real host
// runtime (each module costs a wasm build and the kit's passes: one keeps this tier fast).
func TestGeneratedModules(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and tests generated plugin modules")
	}
	for _, c := range []struct {
		o    Options
		kit  bool
		want []string
	}{
		{Options{Name: "keystone-projects"}, true, []string{"--- PASS: TestLeavesAHandMadeOneAlone", "--- PASS: TestConformance/cleanup"}},
		{Options{Name: "neutron-address-scopes"}, false, []string{"--- PASS: TestCreateConvergeEditDelete"}},
		{Options{Name: "neutron-widgets", Path: "v2.0/widgets"}, false, []string{"--- PASS: TestRefusesBadSpecs"}},
		// Ironic: bare bodies, JSON Patch, the microversion, trait names, ownership in extra;
		// deploy templates as the system-scoped admin. The kit runs on runbooks (the Ironic shape
		// is the same; each kit run costs a wasm build), and test/e2e runs both on real Ironic.
		{Options{Name: "ironic-runbooks"}, true, []string{"--- PASS: TestLeavesAHandMadeOneAlone", "--- PASS: TestConformance/cleanup"}},
		{Options{Name: "ironic-deploy-templates"}, false, []string{"--- PASS: TestCreateConvergeEditDelete", "--- PASS: TestImportObservesOnly"}},
	} {
		t.Run(c.o.Name, func(t *testing.T) {
			t.Parallel()
			dir := generate(t, t.TempDir(), c.o)
			run(t, dir, nil, "go", "mod", "tidy")
			run(t, dir, nil, "go", "vet", "./...")
			run(t, dir, []string{"GOOS=wasip1", "GOARCH=wasm"}, "go", "vet", "./...")
			args := []string{"test", "-count=1", "-v", "./..."}
			if !c.kit {
				args = append(args, "-short")
			}
			out := run(t, dir, nil, "go", args...)
			for _, want := range c.want {
				assert.Contains(t, out, want)
			}
		})
	}
}

// TestReproducibleBuild: the generated module's Makefile builds a module whose digest does not
// depend on where it was built, and which embeds no path of the machine.
func TestReproducibleBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a generated plugin twice")
	}
	o := Options{Name: "keystone-projects"}
	a := generate(t, filepath.Join(t.TempDir(), "alice", "src"), o)
	run(t, a, nil, "go", "mod", "tidy")
	run(t, a, nil, "make", "build")
	wa, err := os.ReadFile(filepath.Join(a, "keystone-projects.wasm"))
	require.NoError(t, err)
	assert.False(t, bytes.Contains(wa, []byte(a)), "the module embeds the path it was built in")

	b := generate(t, filepath.Join(t.TempDir(), "ci"), o)
	for _, f := range []string{"go.mod", "go.sum"} {
		require.NoError(t, os.WriteFile(filepath.Join(b, f), mustRead(t, filepath.Join(a, f)), 0o644))
	}
	run(t, b, nil, "make", "build")
	assert.Equal(t, digest(wa), digest(mustRead(t, filepath.Join(b, "keystone-projects.wasm"))),
		"the same generated module built in two places differs")
}

// TestCRDDeclaresTheLifecycle: the generated CRD holds the lifecycle's fields and rules and every
// status field the host writes; example.yaml is of its kind. test/plugins applies generated
// CRDs, examples and invalid examples to a real API server.
func TestCRDDeclaresTheLifecycle(t *testing.T) {
	dir := t.TempDir()
	_, err := Write(dir, Options{Name: "keystone-projects"})
	require.NoError(t, err)
	var crd struct {
		Spec struct {
			Names    struct{ Kind, Plural string }
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema struct {
						Properties map[string]struct {
							Properties  map[string]map[string]any
							Validations []struct{ Rule, Message string } `json:"x-kubernetes-validations"`
						}
					}
				}
			}
		}
	}
	require.NoError(t, yaml.Unmarshal(mustRead(t, filepath.Join(dir, "crd.yaml")), &crd))
	assert.Equal(t, "keystoneprojects", crd.Spec.Names.Plural, "the plural is the plugin name without dashes")
	props := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties
	for _, f := range []string{"cloudCredentialsRef", "managementPolicy", "managedOptions", "import", "resource"} {
		assert.Contains(t, props["spec"].Properties, f, "spec.%s", f)
	}
	var messages []string
	for _, v := range props["spec"].Validations {
		messages = append(messages, v.Message)
	}
	assert.Contains(t, messages, "spec.managementPolicy unmanaged needs spec.import")
	assert.Contains(t, messages, "spec.import and spec.resource are exclusive")
	for _, f := range []string{"syncStatus", "lastSyncTime", "message", "observedGeneration", "conditions", "id", "resource"} {
		assert.Contains(t, props["status"].Properties, f, "status.%s", f)
	}
	resource := props["spec"].Properties["resource"]["properties"].(map[string]any)
	name := resource["name"].(map[string]any)
	assert.EqualValues(t, 64, name["maxLength"], "Keystone's project name limit")
	domain := resource["domain_id"].(map[string]any)
	assert.Contains(t, domain["x-kubernetes-validations"], map[string]any{"rule": "self == oldSelf",
		"message": "domain_id is fixed at creation; delete and recreate the CR to change it"})
	tags := resource["tags"].(map[string]any)
	assert.EqualValues(t, 79, tags["maxItems"], "80 tags, one of them the owner tag")

	var example struct{ Kind string }
	require.NoError(t, yaml.Unmarshal(mustRead(t, filepath.Join(dir, "example.yaml")), &example))
	assert.Equal(t, crd.Spec.Names.Kind, example.Kind)
	readme := string(mustRead(t, filepath.Join(dir, "README.md")))
	assert.Contains(t, readme, `## Ownership: the tag "openstack-sync:keystone-projects"`)
	assert.True(t, strings.Contains(readme, "--ownership tag|name-prefix|description|extra|none"))
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
