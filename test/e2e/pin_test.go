//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHookHonoursThePin runs a hook wrapper the chart's init container wrote, with the chart's
// container environment, as shell-operator does at start-up (--config): with the pinned digest it
// prints its configuration; with another pin the host refuses the module, so the pin protects
// every run and not only the pod's start.
func TestHookHonoursThePin(t *testing.T) {
	h := need(t)
	ctx := context.Background()
	d, err := h.installedDeployment(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, h.hooksDir, "the operator ran, so the init script wrote the wrappers")
	env := containerEnv(d.Spec.Template.Spec.Containers[0], map[string]string{
		"POD_NAMESPACE": h.namespace, "KUBECONFIG": h.saKubeconfig,
		"OPENSTACK_SYNC_CACHE_DIR": filepath.Join(h.env.WorkDir, "wasm-cache"),
	})
	wrapper := filepath.Join(h.hooksDir, "neutron-segment-ranges")
	const pin = "NEUTRON_SEGMENT_RANGE_PLUGIN_SHA256="

	cmd := exec.Command(wrapper, "--config")
	cmd.Env = env
	out, err := cmd.Output()
	require.NoError(t, err, "hook --config with the chart's environment")
	var cfg struct {
		Kubernetes []struct {
			Name, APIVersion, Kind string
		} `json:"kubernetes"`
	}
	require.NoError(t, json.Unmarshal(out, &cfg), string(out))
	require.Len(t, cfg.Kubernetes, 1)
	assert.Equal(t, "neutron-segment-ranges", cfg.Kubernetes[0].Name)
	assert.Equal(t, segmentRanges.gvr.Group+"/"+segmentRanges.gvr.Version, cfg.Kubernetes[0].APIVersion)
	assert.Equal(t, segmentRanges.kind, cfg.Kubernetes[0].Kind)

	var wrong []string
	for _, kv := range env {
		if strings.HasPrefix(kv, pin) {
			kv = pin + strings.Repeat("0", 64)
		}
		wrong = append(wrong, kv)
	}
	cmd = exec.Command(wrapper, "--config")
	cmd.Env = wrong
	all, err := cmd.CombinedOutput()
	require.Error(t, err, "a module that is not the pinned one must be refused:\n%s", all)
	assert.Contains(t, string(all), "digest mismatch")
}
