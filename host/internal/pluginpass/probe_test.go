package pluginpass

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/openstack-sync/openstack-sync/host/internal/fakecloud"
)

func TestProbe(t *testing.T) {
	e := newEnv(t, setup{plugin: "openstack-probe", prefix: "OPENSTACK_PROBE"})
	e.vars["OPENSTACK_PROBE_DEFAULT_SECRET"] = "openstack-credentials"
	e.vars["OPENSTACK_PROBE_DEFAULT_CLOUD"] = fakecloud.AdminCloud
	assert.Equal(t, 0, e.startup())
	assert.Contains(t, e.logs.String(), "connectivity check passed")
	validated := false
	for _, r := range e.cloud.Requests() {
		if r.Service == fakecloud.Identity && r.Method == "HEAD" && r.Path == "/v3/auth/tokens" && r.Status == 200 {
			validated = true
		}
	}
	assert.True(t, validated, "the token was validated with Keystone")

	e.cloud.SetPassword("admin", "changed")
	assert.Equal(t, 1, e.startup())
	assert.Contains(t, e.logs.String(), "connectivity check FAILED")

	e.vars["OPENSTACK_PROBE_ENABLED"] = "false"
	assert.Equal(t, 0, e.startup())
	assert.Contains(t, e.logs.String(), "connectivity check skipped")
}
