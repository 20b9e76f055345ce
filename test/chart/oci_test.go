package chart_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pluginsDir is where the chart puts plugins pulled from a registry (the cache volume).
const pluginsDir = "/var/cache/openstack-sync/plugins"

// TestOCISourceAndCRDFromValues renders a third party's plugin given only by values (an OCI
// source and its CRD), and checks what the hook sees: the CRD identity, RBAC on its resource,
// and an init container that pulls the module by digest onto the cache volume with the
// registry credentials.
func TestOCISourceAndCRDFromValues(t *testing.T) {
	bin := findHelm(t)
	out, errOut, err := template(t, bin, "testdata/values/oci-source.yaml")
	require.NoError(t, err, errOut)
	env := map[string]string{}
	for _, e := range container(t, deployment(t, out), "shell-operator").Env {
		env[e.Name] = e.Value
	}
	assert.Equal(t, "scopes.example.org/v1alpha1", env["NEUTRON_ADDRESS_SCOPE_CRD_API_VERSION"])
	assert.Equal(t, "NeutronAddressScope", env["NEUTRON_ADDRESS_SCOPE_CRD_KIND"])
	assert.Equal(t, "neutronaddressscopes.scopes.example.org", env["NEUTRON_ADDRESS_SCOPE_CRD_RESOURCE"])
	assert.Equal(t, "true", env["NEUTRON_ADDRESS_SCOPE_STATUS_ENABLED"])
	assert.Equal(t, strings.Repeat("5", 64), env["NEUTRON_ADDRESS_SCOPE_PLUGIN_SHA256"])
	assert.Contains(t, out, `resources: ["neutronaddressscopes"]`, "the Role covers the CRD given in the values")
	assert.Contains(t, out, `resources: ["neutronaddressscopes/status"]`)

	d := deployment(t, out)
	require.Len(t, d.Spec.Template.Spec.InitContainers, 1)
	ic := d.Spec.Template.Spec.InitContainers[0]
	mounts := map[string]string{}
	for _, m := range ic.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	assert.Equal(t, "/var/cache/openstack-sync", mounts["compilation-cache"], "pulled plugins land on the volume the hooks read")
	assert.Equal(t, "/var/run/openstack-sync/registry", mounts["registry-credentials"])
	var dockerConfig string
	for _, e := range ic.Env {
		if e.Name == "DOCKER_CONFIG" {
			dockerConfig = e.Value
		}
	}
	assert.Equal(t, "/var/run/openstack-sync/registry", dockerConfig)
	var secret string
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == "registry-credentials" {
			secret = v.Secret.SecretName
			require.Len(t, v.Secret.Items, 1)
			assert.Equal(t, ".dockerconfigjson", v.Secret.Items[0].Key)
			assert.Equal(t, "config.json", v.Secret.Items[0].Path)
		}
	}
	assert.Equal(t, "registry-credentials", secret)

	// No registry, no pull: the default rendering mounts nothing more into the init container.
	out, errOut, err = template(t, bin, "testdata/values/all-enabled.yaml")
	require.NoError(t, err, errOut)
	assert.NotContains(t, out, "registry-credentials")
	assert.NotContains(t, out, "plugin pull")
}

// TestOCIPullScript runs the rendered init script with a stand-in host binary: each plugin with
// a source is pulled by its digest with its module pin, the pinned digest is then checked on
// the pulled file, and the hook wrapper runs the pulled copy.
func TestOCIPullScript(t *testing.T) {
	bin := findHelm(t)
	module := []byte("\x00asm pulled scopes")
	sum := sha256.Sum256(module)
	digest := hex.EncodeToString(sum[:])
	values := filepath.Join(t.TempDir(), "values.yaml")
	require.NoError(t, os.WriteFile(values, []byte(`plugins: {addressScopes: true}
pluginRegistry: {insecure: true}
pluginData:
  addressScopes:
    plugin: {source: "oci://127.0.0.1:5000/team/scopes@sha256:`+strings.Repeat("b", 64)+`", sha256: "`+digest+`"}
    hook: {envPrefix: NEUTRON_ADDRESS_SCOPE}
`), 0o644))
	out, errOut, err := template(t, bin, values)
	require.NoError(t, err, errOut)
	ic := deployment(t, out).Spec.Template.Spec.InitContainers[0]
	argv := append(append([]string{}, ic.Command...), ic.Args...)
	// The script writes to the cache volume's path; here it is a temporary directory.
	cache := t.TempDir()
	for i := range argv {
		argv[i] = strings.ReplaceAll(argv[i], pluginsDir, cache+"/plugins")
	}

	// The stand-in host: "plugin pull ... -o FILE ..." writes the module served under the
	// digest, and records its arguments; "hook ..." reports what it was given.
	pulled := filepath.Join(t.TempDir(), "served.wasm")
	require.NoError(t, os.WriteFile(pulled, module, 0o644))
	calls := filepath.Join(t.TempDir(), "calls")
	host := filepath.Join(t.TempDir(), "openstack-sync")
	require.NoError(t, os.WriteFile(host, []byte(`#!/bin/sh
echo "$*" >> `+calls+`
if [ "$1" = plugin ]; then
  while [ $# -gt 0 ]; do [ "$1" = -o ] && cp `+pulled+` "$2"; shift; done
fi
echo "args=$*"
`), 0o755))
	run := func() (string, string, error) {
		hooks := t.TempDir()
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), "HOST_BINARY="+host, "HOOKS_DIR="+hooks)
		b, err := cmd.CombinedOutput()
		return hooks, string(b), err
	}
	hooks, outText, err := run()
	require.NoError(t, err, outText)
	b, err := os.ReadFile(calls)
	require.NoError(t, err)
	assert.Equal(t, "plugin pull --insecure -o "+cache+"/plugins/addressScopes.wasm --sha256 "+digest+
		" 127.0.0.1:5000/team/scopes@sha256:"+strings.Repeat("b", 64)+"\n", string(b))
	got, err := exec.Command(filepath.Join(hooks, "addressScopes"), "--config").CombinedOutput()
	require.NoError(t, err, string(got))
	assert.Equal(t, "args=hook --plugin "+cache+"/plugins/addressScopes.wasm --env-prefix NEUTRON_ADDRESS_SCOPE --config\n", string(got))

	// A pull that fails fails the pod, naming the plugin and the source.
	require.NoError(t, os.WriteFile(host, []byte("#!/bin/sh\n[ \"$1\" = plugin ] && { echo 'pull: MANIFEST_UNKNOWN' >&2; exit 1; }\nexit 0\n"), 0o755))
	_, outText, err = run()
	require.Error(t, err)
	assert.Contains(t, outText, "verify-plugins: enabled plugin addressScopes: cannot pull 127.0.0.1:5000/team/scopes@sha256:"+strings.Repeat("b", 64))
}
