//go:build e2e

package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// pulledPluginsDir is where the chart's init script pulls OCI plugins to: the cache volume.
const pulledPluginsDir = "/var/cache/openstack-sync/plugins"

// TestOCIPluginThroughTheChart is docs/writing-plugins.md's distribution path end to end: the
// host binary pushes a plugin to a real registry server (go-containerregistry's, on loopback),
// helm installs the chart with pluginData.<key>.plugin.source oci://...@sha256:..., the chart's
// init script pulls the module by digest onto the cache volume with the host binary and checks
// its pin, and shell-operator runs the pulled copy until the CR is Synced.
func TestOCIPluginThroughTheChart(t *testing.T) {
	h := need(t)
	ctx := context.Background()
	// The suite's own operator prunes the same cloud: it must not run beside this release.
	h.stopOperator()

	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	file := filepath.Join(h.env.PluginsDir, "ironic-runbooks.wasm")
	body, err := os.ReadFile(file)
	require.NoError(t, err)
	sum := sha256.Sum256(body)
	moduleDigest := hex.EncodeToString(sum[:])
	out, err := exec.Command(h.env.HostBinary, "plugin", "push", "--insecure", file,
		strings.TrimPrefix(reg.URL, "http://")+"/e2e/ironic-runbooks:e2e").Output()
	require.NoError(t, err, "plugin push")
	ref := strings.TrimSpace(string(out))
	require.Contains(t, ref, "@sha256:", "push prints the reference pinned by its manifest digest")

	r := h.installReleaseValues(t, ctx, "oci", "openstack-sync-e2e-oci", fmt.Sprintf(`hostBinary: %s
plugins: {ironicRunbooks: true}
pluginRegistry: {insecure: true}
pluginData:
  ironicRunbooks:
    plugin: {source: "oci://%s", sha256: %q}
    hook: {env: {PRUNE: true, READY_RETRIES: 3, READY_DELAY: 1}}
`, h.env.HostBinary, ref, moduleDigest))
	cache := filepath.Join(h.env.WorkDir, "oci-cache-volume", "plugins")
	r.podPaths = map[string]string{pulledPluginsDir: cache}

	cr := renamed(h.examples.crs[runbooks.kind], "-oci", "spec", "runbookName", "_OCI")
	clean := func() { assert.NoError(t, h.cloud.deleteRunbook(ctx, osName(cr))) }
	clean()
	t.Cleanup(func() {
		// The pod goes first, or it would put the finalizer back.
		r.killAll()
		if u, err := h.dyn.Resource(runbooks.gvr).Namespace(r.namespace).Get(ctx, cr.GetName(), metav1.GetOptions{}); err == nil {
			u.SetFinalizers(nil)
			_, _ = h.dyn.Resource(runbooks.gvr).Namespace(r.namespace).Update(ctx, u, metav1.UpdateOptions{})
		}
		clean()
	})

	r.start(t, ctx, "oci-operator-0")
	pulled, err := os.ReadFile(filepath.Join(cache, "ironicRunbooks.wasm"))
	require.NoError(t, err, "the init container pulled the plugin onto the cache volume")
	assert.Equal(t, body, pulled, "the pulled module is the pushed one")
	wrapper, err := os.ReadFile(filepath.Join(h.env.WorkDir, "oci-oci-operator-0", "hooks", "ironicRunbooks"))
	require.NoError(t, err)
	assert.Contains(t, string(wrapper), "--plugin "+filepath.Join(cache, "ironicRunbooks.wasm"), "the hook runs the pulled copy")

	createIn(t, ctx, h, r.namespace, cr)
	waitSyncedIn(t, ctx, h, r.namespace, cr.GetName(), 3*time.Minute)
	rb, err := h.cloud.runbook(ctx, osName(cr))
	require.NoError(t, err)
	assert.NotNil(t, rb, "runbook %s made by the pulled plugin", osName(cr))

	// Deleting the CR prunes its runbook (PRUNE=true) through the same pulled plugin.
	require.NoError(t, h.dyn.Resource(runbooks.gvr).Namespace(r.namespace).Delete(ctx, cr.GetName(), metav1.DeleteOptions{}))
	h.waitFor(t, 3*time.Minute, "the CR's runbook to be pruned", func() (bool, string) {
		rb, err := h.cloud.runbook(ctx, osName(cr))
		if err != nil {
			return false, err.Error()
		}
		return rb == nil, "still in Ironic"
	})
}
