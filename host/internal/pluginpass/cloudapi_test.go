package pluginpass

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/openstack"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

// runbookAPI is the Ironic microversion the test's own runbook requests use: the first with runbooks.
const runbookAPI = "1.92"

type fileSecrets struct{ clouds []byte }

func (f fileSecrets) GetSecretData(context.Context, string, string) (map[string][]byte, error) {
	return map[string][]byte{"clouds.yaml": f.clouds}, nil
}

// session is the test's own session to a cloud of the clouds.yaml: scenarios seed and read back
// through the API so that the same code runs against the fake and the real cloud.
func (e *env) session(cloud string) plugin.Session {
	e.t.Helper()
	if s, ok := e.sessions[cloud]; ok {
		return s
	}
	conn := recordingConnector{openstack.NewConnector(fileSecrets{e.clouds}, openstack.Options{Plugin: "pluginpass"}), e.rec, false}
	s, err := conn.Connect(context.Background(), plugin.Credentials{Namespace: namespace, SecretName: "openstack-credentials", CloudName: cloud})
	require.NoError(e.t, err)
	e.sessions[cloud] = s
	return s
}

// call sends one of the test's requests and decodes a 2xx JSON answer into out; it returns the
// status so that a caller can treat 404 as "gone".
func (e *env) call(cloud string, req plugin.Request, out any) int {
	e.t.Helper()
	resp, err := e.session(cloud).Do(context.Background(), req)
	require.NoError(e.t, err, "%s %s", req.Method, req.Path)
	if resp.StatusCode == http.StatusNotFound {
		return resp.StatusCode
	}
	require.Less(e.t, resp.StatusCode, 300, "%s %s: %s", req.Method, req.Path, resp.Body)
	if out != nil && len(resp.Body) > 0 {
		require.NoError(e.t, json.Unmarshal(resp.Body, out), "%s %s", req.Method, req.Path)
	}
	return resp.StatusCode
}

func jsonBody(v any) []byte {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return raw
}

// cleanupReal deletes everything this test created on the real cloud, then fails the test if the
// delete guard ever refused one of the plugin's deletes.
func (e *env) cleanupReal() {
	e.rec.mu.Lock()
	made := slices.Clone(e.rec.made)
	refused := slices.Clone(e.rec.refused)
	e.rec.mu.Unlock()
	// Newest first, but every router before any flavor and every flavor before any profile: an
	// adopted flavor is older than the profile the plugin bound to it, and Neutron refuses to delete
	// a bound profile.
	slices.Reverse(made)
	rank := func(c created) int {
		switch {
		case strings.HasPrefix(c.path, "/v2.0/routers/"):
			return 0
		case strings.HasPrefix(c.path, "/v2.0/flavors/"), strings.HasPrefix(c.path, "/v2.0/subnetpools/"):
			return 1 // a pool before its address scope: Neutron keeps a scope in use
		}
		return 2
	}
	slices.SortStableFunc(made, func(a, b created) int { return rank(a) - rank(b) })
	for _, c := range made {
		req := plugin.Request{Service: c.service, Method: http.MethodDelete, Path: strings.TrimPrefix(c.path, "/")}
		if c.service == "baremetal" {
			req.Microversion = runbookAPI
		}
		resp, err := e.session(c.cloud).Do(context.Background(), req)
		switch {
		case err != nil:
			e.t.Errorf("cleanup: DELETE %s: %v", c.path, err)
		case resp.StatusCode >= 300 && resp.StatusCode != http.StatusNotFound:
			e.t.Errorf("cleanup: DELETE %s: %d %s", c.path, resp.StatusCode, resp.Body)
		}
	}
	for _, r := range refused {
		e.t.Errorf("the plugin tried to delete what this test did not create (refused): %s", r)
	}
}

// sharedCloudPlugin is a plugin on the shared real cloud: its prune also sees, as desired, the name
// of every resource this test did not create, so that it cannot delete another run's or another
// tool's owned resources (the delete guard backs this up for what has no name: service profiles).
type sharedCloudPlugin struct {
	plugin.Plugin
	e *env
}

func (p *sharedCloudPlugin) Prune(ctx context.Context, s plugin.Session, req plugin.PruneRequest) error {
	if len(req.DesiredSpecs) == 0 && !req.AuthoritativeEmpty {
		return p.Plugin.Prune(ctx, s, req) // a skipped prune stays skipped
	}
	var foreign []json.RawMessage
	for _, n := range p.e.namesOnCloud(req.Credentials.CloudName) {
		if !strings.Contains(n, p.e.sfx) {
			raw, err := json.Marshal(map[string]any{"name": n, "runbookName": n})
			if err != nil {
				return err
			}
			foreign = append(foreign, raw)
		}
	}
	req.DesiredSpecs = append(slices.Clone(req.DesiredSpecs), foreign...)
	p.e.t.Logf("prune on the shared cloud: %d resource(s) this test did not create are added to the desired set", len(foreign))
	return p.Plugin.Prune(ctx, s, req)
}

// namesOnCloud lists the names of every resource the plugin could prune on a cloud.
func (e *env) namesOnCloud(cloud string) []string {
	var names []string
	switch e.plugin {
	case "neutron-router-flavors":
		var body struct{ Flavors []struct{ Name string } }
		e.call(cloud, plugin.Request{Service: "network", Method: "GET", Path: "v2.0/flavors"}, &body)
		for _, f := range body.Flavors {
			names = append(names, f.Name)
		}
	case "ironic-runbooks":
		var body struct{ Runbooks []struct{ Name string } }
		e.call(cloud, plugin.Request{Service: "baremetal", Method: "GET", Path: "v1/runbooks", Microversion: runbookAPI}, &body)
		for _, r := range body.Runbooks {
			names = append(names, r.Name)
		}
	case "neutron-subnet-pools":
		var body struct{ Subnetpools []struct{ Name string } }
		e.call(cloud, plugin.Request{Service: "network", Method: "GET", Path: "v2.0/subnetpools"}, &body)
		for _, p := range body.Subnetpools {
			names = append(names, p.Name)
		}
	default:
		e.t.Fatalf("no prune guard for plugin %s", e.plugin)
	}
	return names
}
