package pluginpass

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

// call is one request a plugin (not the test) sent, as the scenarios assert on it.
type call struct {
	Service, Method, Path, Microversion string
	Status                              int
}

// created is a resource made during the test, by the plugin or by the test's own seeding, which
// the real cloud's cleanup deletes and the delete guard lets the plugin delete.
type created struct {
	cloud, service, path string // path is the resource's own, e.g. "/v2.0/flavors/<id>"
	aliases              []string
}

// recorder sees every request on both clouds. On the shared real cloud it also guards deletes: a
// plugin may delete only what this test created, whatever its prune decided.
type recorder struct {
	mu      sync.Mutex
	calls   []call
	made    []created
	guard   bool
	refused []string
}

func (r *recorder) snapshot() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

func (r *recorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = nil
}

func (r *recorder) owns(service, path string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.made {
		if c.service == service && (c.path == path || slices.Contains(c.aliases, path)) {
			return true
		}
	}
	return false
}

// collections are the top-level resources a POST creates; the others (a flavor's binding) are
// deleted with their parent.
var collections = map[string]string{
	"/v2.0/flavors": "flavor", "/v2.0/service_profiles": "service_profile", "/v2.0/routers": "router",
	"/v2.0/network_segment_ranges": "network_segment_range", "/v1/runbooks": "",
	"/v2.0/subnetpools": "subnetpool", "/v2.0/address-scopes": "address_scope",
}

func (r *recorder) noteCreated(cloud string, req plugin.Request, path string, resp *plugin.Response) {
	key, ok := collections[path]
	if !ok || req.Method != http.MethodPost || resp.StatusCode >= 300 {
		return
	}
	var body map[string]any
	if json.Unmarshal(resp.Body, &body) != nil {
		return
	}
	if key != "" {
		body, _ = body[key].(map[string]any)
	}
	id, _ := body["id"].(string)
	if id == "" {
		id, _ = body["uuid"].(string)
	}
	if id == "" {
		return
	}
	c := created{cloud: cloud, service: req.Service, path: path + "/" + id}
	if name, _ := body["name"].(string); name != "" && key == "" {
		c.aliases = append(c.aliases, path+"/"+name) // Ironic deletes by name as well as by uuid
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.made = append(r.made, c)
}

func cleanPath(p string) string { return "/" + strings.TrimPrefix(p, "/") }

// recordingConnector wraps the sessions of one cloud connector; record is false for the test's own
// requests (seeding, reading state back), which scenarios must not count as the plugin's.
type recordingConnector struct {
	plugin.Connector
	rec    *recorder
	record bool
}

func (c recordingConnector) Connect(ctx context.Context, creds plugin.Credentials) (plugin.Session, error) {
	s, err := c.Connector.Connect(ctx, creds)
	if err != nil {
		return nil, err
	}
	return recordingSession{s, c.rec, c.record, creds.CloudName}, nil
}

type recordingSession struct {
	inner  plugin.Session
	rec    *recorder
	record bool
	cloud  string
}

func (s recordingSession) Do(ctx context.Context, req plugin.Request) (*plugin.Response, error) {
	path := cleanPath(req.Path)
	if s.record && s.rec.guard && req.Method == http.MethodDelete && !s.rec.owns(req.Service, path) {
		s.rec.mu.Lock()
		s.rec.refused = append(s.rec.refused, req.Service+" DELETE "+path)
		s.rec.mu.Unlock()
		return &plugin.Response{StatusCode: http.StatusForbidden, Header: http.Header{},
			Body: fmt.Appendf(nil, `{"error_message": "pluginpass: %s was not created by this test; deleting it is refused"}`, path)}, nil
	}
	resp, err := s.inner.Do(ctx, req)
	if err != nil {
		return nil, err
	}
	s.rec.noteCreated(s.cloud, req, path, resp)
	if s.record {
		s.rec.mu.Lock()
		s.rec.calls = append(s.rec.calls, call{Service: req.Service, Method: req.Method, Path: path,
			Microversion: req.Microversion, Status: resp.StatusCode})
		s.rec.mu.Unlock()
	}
	return resp, nil
}
