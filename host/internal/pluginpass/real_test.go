package pluginpass

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/openstack"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm"
)

// realDo sends a cleanup request and fails the test on anything but success or 404.
func realDo(ctx context.Context, t *testing.T, s plugin.Session, req plugin.Request) *plugin.Response {
	t.Helper()
	resp, err := s.Do(ctx, req)
	require.NoError(t, err)
	if resp.StatusCode != 404 {
		require.Less(t, resp.StatusCode, 300, "%s %s: %s", req.Method, req.Path, resp.Body)
	}
	return resp
}

// realIDs lists the ids of the items of a Neutron collection with the given name.
func realIDs(ctx context.Context, t *testing.T, s plugin.Session, path, name, key string) []string {
	t.Helper()
	resp := realDo(ctx, t, s, plugin.Request{Service: "network", Method: "GET", Path: path, Query: url.Values{"name": {name}}})
	var body map[string][]struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal(resp.Body, &body))
	var ids []string
	for _, it := range body[key] {
		ids = append(ids, it.ID)
	}
	return ids
}

type fileSecrets struct{ clouds []byte }

func (f fileSecrets) GetSecretData(context.Context, string, string) (map[string][]byte, error) {
	return map[string][]byte{"clouds.yaml": f.clouds}, nil
}

// TestRealCloudReconcile runs each plugin's readiness and reconcile (never prune: the cloud is
// shared) against the real servers of hack/os-harness.sh, twice: the second pass must write nothing.
func TestRealCloudReconcile(t *testing.T) {
	path := os.Getenv("OPENSTACK_SYNC_E2E_CLOUDS")
	if path == "" {
		t.Skip("OPENSTACK_SYNC_E2E_CLOUDS unset")
	}
	clouds, err := os.ReadFile(path)
	require.NoError(t, err)
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	suffix := strings.ToUpper(hex.EncodeToString(b))
	cases := []struct {
		plugin, cloud string
		spec          map[string]any
		cleanup       func(ctx context.Context, s plugin.Session)
	}{
		{plugin: "neutron-segment-ranges", cloud: "local-admin",
			spec: map[string]any{"name": "pw-" + suffix, "network_type": "geneve", "minimum": 6000, "maximum": 6009},
			cleanup: func(ctx context.Context, s plugin.Session) {
				for _, id := range realIDs(ctx, t, s, "v2.0/network_segment_ranges", "pw-"+suffix, "network_segment_ranges") {
					realDo(ctx, t, s, plugin.Request{Service: "network", Method: "DELETE", Path: "v2.0/network_segment_ranges/" + id})
				}
			}},
		{plugin: "neutron-router-flavors", cloud: "local-admin",
			spec: map[string]any{"name": "pw-" + suffix, "description": "plugins engineer check",
				"service_profiles": []any{map[string]any{"driver": "neutron.services.l3_router.service_providers.single_node.SingleNodeDriver",
					"meta_info": map[string]any{"resource_class": "pw-" + suffix}}}},
			cleanup: func(ctx context.Context, s plugin.Session) {
				resp := realDo(ctx, t, s, plugin.Request{Service: "network", Method: "GET", Path: "v2.0/flavors",
					Query: url.Values{"name": {"pw-" + suffix}}})
				var body struct {
					Flavors []struct {
						ID       string   `json:"id"`
						Profiles []string `json:"service_profiles"`
					} `json:"flavors"`
				}
				require.NoError(t, json.Unmarshal(resp.Body, &body))
				for _, f := range body.Flavors {
					realDo(ctx, t, s, plugin.Request{Service: "network", Method: "DELETE", Path: "v2.0/flavors/" + f.ID})
					for _, p := range f.Profiles {
						realDo(ctx, t, s, plugin.Request{Service: "network", Method: "DELETE", Path: "v2.0/service_profiles/" + p})
					}
				}
			}},
		{plugin: "ironic-runbooks", cloud: "local-system",
			spec: map[string]any{"runbookName": "CUSTOM_PW_" + suffix, "public": true, "traits": []any{"CUSTOM_PW"},
				"description": "d", "extra": map[string]any{"k": "v"},
				"steps": []any{map[string]any{"interface": "bios", "step": "apply_configuration", "order": 2,
					"args": map[string]any{"settings": []any{map[string]any{"name": "A", "value": "B"}}}},
					map[string]any{"interface": "management", "step": "clear_job_queue", "order": 1}}},
			cleanup: func(ctx context.Context, s plugin.Session) {
				realDo(ctx, t, s, plugin.Request{Service: "baremetal", Method: "DELETE", Path: "v1/runbooks/CUSTOM_PW_" + suffix,
					Microversion: "1.92"})
			}},
	}
	t.Run("openstack-probe", func(t *testing.T) {
		ctx := context.Background()
		p, err := wasm.Load(ctx, filepath.Join(pluginsDir, "openstack-probe.wasm"), wasm.Options{
			LookupEnv: func(string) (string, bool) { return "", false }, CacheDir: filepath.Join(os.TempDir(), "openstack-sync-test-wazero")})
		require.NoError(t, err)
		defer p.Close(ctx)
		conn := openstack.NewConnector(fileSecrets{clouds}, openstack.Options{Plugin: "openstack-probe"})
		s, err := conn.Connect(ctx, plugin.Credentials{Namespace: "openstack", SecretName: "x", CloudName: "local-admin"})
		require.NoError(t, err)
		assert.NoError(t, p.WaitForAPI(ctx, s), "Keystone validates the session's own token")
	})
	for _, tc := range cases {
		t.Run(tc.plugin, func(t *testing.T) {
			ctx := context.Background()
			var logs bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			p, err := wasm.Load(ctx, filepath.Join(pluginsDir, tc.plugin+".wasm"), wasm.Options{Logger: log,
				LookupEnv: func(string) (string, bool) { return "", false }, CacheDir: filepath.Join(os.TempDir(), "openstack-sync-test-wazero")})
			require.NoError(t, err)
			defer p.Close(ctx)
			conn := openstack.NewConnector(fileSecrets{clouds}, openstack.Options{Logger: log, Plugin: tc.plugin})
			s, err := conn.Connect(ctx, plugin.Credentials{Namespace: "openstack", SecretName: "x", CloudName: tc.cloud})
			require.NoError(t, err)
			require.NoError(t, p.WaitForAPI(ctx, s))
			t.Cleanup(func() { tc.cleanup(context.Background(), s) })
			for pass := 1; pass <= 2; pass++ {
				logs.Reset()
				c, err := p.NewCache(ctx)
				require.NoError(t, err)
				res, err := p.Reconcile(ctx, s, c, plugin.ReconcileRequest{Object: plugin.Object{Kind: "X", Namespace: "openstack", Name: "pw"}, Spec: tc.spec})
				require.NoError(t, c.Close(ctx))
				require.NoError(t, err, "pass %d; log:\n%s", pass, logs.String())
				t.Logf("pass %d notes %v", pass, res.Notes)
				var writes []string
				for line := range strings.Lines(logs.String()) {
					if strings.Contains(line, "openstack request") && !strings.Contains(line, "method=GET") {
						writes = append(writes, line)
					}
				}
				if pass == 1 {
					assert.NotEmpty(t, writes)
				} else {
					assert.Empty(t, writes, "a converged pass writes nothing")
				}
				t.Logf("pass %d requests:\n%s", pass, logs.String())
			}
		})
	}
}
