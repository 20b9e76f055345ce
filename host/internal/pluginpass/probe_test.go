package pluginpass

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/fakecloud"
	"github.com/openstack-sync/openstack-sync/host/internal/fakekube"
)

var passwordLine = regexp.MustCompile(`(?m)^(\s*password:).*$`)

// probe plays the connectivity probe's situations with the Go probe or its C twin
// (plugins-c/openstack-probe-c), which must behave the same through the same host.
func probe(plugin, prefix string) func(t *testing.T, b backend) {
	return func(t *testing.T, b backend) { probeScenario(t, b, plugin, prefix) }
}

func probeScenario(t *testing.T, b backend, plugin, prefix string) {
	e := newEnv(t, b, setup{plugin: plugin, prefix: prefix})
	e.vars[prefix+"_DEFAULT_SECRET"] = "openstack-credentials"
	e.vars[prefix+"_DEFAULT_CLOUD"] = fakecloud.AdminCloud
	assert.Equal(t, 0, e.startup())
	assert.Contains(t, e.logs.String(), "connectivity check passed")
	validated := false
	for _, c := range e.rec.snapshot() {
		if c.Service == "identity" && c.Method == "HEAD" && c.Path == "/v3/auth/tokens" && c.Status == 200 {
			validated = true
		}
	}
	assert.True(t, validated, "the token was validated with Keystone")

	// A wrong password in the Secret (rather than a changed one in Keystone: the real cloud is shared).
	secret, err := e.kube.Get(fakekube.SecretResource, namespace, "openstack-credentials")
	require.NoError(t, err)
	secret["data"] = map[string]any{"clouds.yaml": passwordLine.ReplaceAll(e.clouds, []byte("${1} wrong-"+e.sfx))}
	_, err = e.kube.Update(fakekube.SecretResource, namespace, "openstack-credentials", "", secret)
	require.NoError(t, err)
	assert.Equal(t, 1, e.startup())
	assert.Contains(t, e.logs.String(), "connectivity check FAILED")

	e.vars[prefix+"_ENABLED"] = "false"
	assert.Equal(t, 0, e.startup())
	assert.Contains(t, e.logs.String(), "connectivity check skipped")
}
