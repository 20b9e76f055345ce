package pluginpass

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRealCloud plays the scenarios against the real Keystone, Neutron and Ironic of
// hack/os-harness.sh (OPENSTACK_SYNC_E2E_CLOUDS names its clouds.yaml). The cloud is shared, so
// every name carries a random suffix, prunes cannot delete what the test did not create, and
// everything created is deleted again in t.Cleanup.
func TestRealCloud(t *testing.T) {
	path := os.Getenv("OPENSTACK_SYNC_E2E_CLOUDS")
	if path == "" {
		t.Skip("OPENSTACK_SYNC_E2E_CLOUDS unset")
	}
	clouds, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, sc := range scenarios {
		if sc.fakeOnly != "" {
			t.Logf("%s/%s runs against the fake only: %s", sc.plugin, sc.name, sc.fakeOnly)
			continue
		}
		t.Run(sc.plugin+"/"+sc.name, func(t *testing.T) { sc.run(t, backend{clouds: clouds}) })
	}
}
