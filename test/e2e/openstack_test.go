//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"sigs.k8s.io/yaml"
)

// Ownership markers, as docs/plugins documents them; the test reads OpenStack directly to see them.
const (
	markerKey           = "openstack-sync.io/managed-by"
	runbookMarkerValue  = "ironic-runbooks"
	profileMarkerValue  = "neutron-router-flavors"
	flavorMarker        = "[openstack-sync.io/neutron-router-flavors]" // as migrate writes it, before a reconcile adds the group
	groupKey            = "openstack-sync.io/credential-group"
	runbookMicroversion = "1.92"
)

// cloud is the test's own view of the real OpenStack, as admin: independent of the host's code.
type cloud struct {
	network, baremetal *gophercloud.ServiceClient
}

// newCloud connects as cloud `admin` for Neutron and as `system` for Ironic: Ironic lets only a
// system-scoped admin delete a public runbook.
func newCloud(ctx context.Context, cloudsYAML, admin, system string) (*cloud, error) {
	c := &cloud{}
	pc, eo, err := provider(ctx, cloudsYAML, admin)
	if err != nil {
		return nil, err
	}
	if c.network, err = openstack.NewNetworkV2(pc, eo); err != nil {
		return nil, err
	}
	if pc, eo, err = provider(ctx, cloudsYAML, system); err != nil {
		return nil, err
	}
	if c.baremetal, err = openstack.NewBareMetalV1(pc, eo); err != nil {
		return nil, err
	}
	c.baremetal.Microversion = runbookMicroversion
	return c, nil
}

func provider(ctx context.Context, cloudsYAML, name string) (*gophercloud.ProviderClient, gophercloud.EndpointOpts, error) {
	var eo gophercloud.EndpointOpts
	body, err := os.ReadFile(cloudsYAML)
	if err != nil {
		return nil, eo, err
	}
	var file struct {
		Clouds map[string]struct {
			Auth struct {
				AuthURL           string `json:"auth_url"`
				Username          string `json:"username"`
				Password          string `json:"password"`
				ProjectName       string `json:"project_name"`
				UserDomainName    string `json:"user_domain_name"`
				ProjectDomainName string `json:"project_domain_name"`
				SystemScope       string `json:"system_scope"`
			} `json:"auth"`
			RegionName string `json:"region_name"`
		} `json:"clouds"`
	}
	if err := yaml.Unmarshal(body, &file); err != nil {
		return nil, eo, fmt.Errorf("%s: %w", cloudsYAML, err)
	}
	entry, ok := file.Clouds[name]
	if !ok {
		return nil, eo, fmt.Errorf("%s has no cloud %q", cloudsYAML, name)
	}
	ao := gophercloud.AuthOptions{
		IdentityEndpoint: entry.Auth.AuthURL, Username: entry.Auth.Username, Password: entry.Auth.Password,
		DomainName: entry.Auth.UserDomainName, AllowReauth: true,
		Scope: &gophercloud.AuthScope{ProjectName: entry.Auth.ProjectName, DomainName: entry.Auth.ProjectDomainName},
	}
	if entry.Auth.SystemScope != "" {
		ao.Scope = &gophercloud.AuthScope{System: true}
	}
	pc, err := openstack.AuthenticatedClient(ctx, ao)
	if err != nil {
		return nil, eo, fmt.Errorf("authenticate to cloud %s: %w", name, err)
	}
	return pc, gophercloud.EndpointOpts{Region: entry.RegionName}, nil
}

// get returns the decoded body, or nil when the resource does not exist.
func get(ctx context.Context, sc *gophercloud.ServiceClient, u string) (map[string]any, error) {
	var out map[string]any
	_, err := sc.Get(ctx, u, &out, &gophercloud.RequestOpts{OkCodes: []int{200}})
	if gophercloud.ResponseCodeIs(err, 404) {
		return nil, nil
	}
	return out, err
}

func (c *cloud) runbook(ctx context.Context, name string) (map[string]any, error) {
	return get(ctx, c.baremetal, c.baremetal.ServiceURL("runbooks", name))
}

func (c *cloud) deleteRunbook(ctx context.Context, name string) error {
	rb, err := c.runbook(ctx, name)
	if err != nil || rb == nil {
		return err
	}
	_, err = c.baremetal.Delete(ctx, c.baremetal.ServiceURL("runbooks", fmt.Sprint(rb["uuid"])), nil)
	return err
}

// one returns the single item of a Neutron list filtered by exact name; nil when there is none.
func (c *cloud) one(ctx context.Context, collection, key, name string) (map[string]any, error) {
	body, err := get(ctx, c.network, c.network.ServiceURL(collection)+"?name="+url.QueryEscape(name))
	if err != nil {
		return nil, err
	}
	items, _ := body[key].([]any)
	var found []map[string]any
	for _, it := range items {
		if m, ok := it.(map[string]any); ok && m["name"] == name {
			found = append(found, m)
		}
	}
	switch len(found) {
	case 0:
		return nil, nil
	case 1:
		return found[0], nil
	}
	return nil, fmt.Errorf("%d %s named %q", len(found), collection, name)
}

func (c *cloud) flavor(ctx context.Context, name string) (map[string]any, error) {
	return c.one(ctx, "flavors", "flavors", name)
}

func (c *cloud) serviceProfile(ctx context.Context, id string) (map[string]any, error) {
	body, err := get(ctx, c.network, c.network.ServiceURL("service_profiles", id))
	if body == nil || err != nil {
		return nil, err
	}
	p, _ := body["service_profile"].(map[string]any)
	return p, nil
}

// profileOwned reads the ownership marker out of a service profile's metainfo JSON text.
func profileOwned(p map[string]any) bool {
	var meta map[string]any
	s, _ := p["metainfo"].(string)
	if json.Unmarshal([]byte(s), &meta) != nil {
		return false
	}
	return meta[markerKey] == profileMarkerValue
}

// deleteFlavor removes a flavor and the owned profiles bound to it (test clean-up).
func (c *cloud) deleteFlavor(ctx context.Context, name string) error {
	return c.deleteFlavorAnd(ctx, name, profileOwned)
}

// deleteFlavorAnd removes a flavor and the profiles bound to it that remove says to.
func (c *cloud) deleteFlavorAnd(ctx context.Context, name string, remove func(profile map[string]any) bool) error {
	f, err := c.flavor(ctx, name)
	if err != nil || f == nil {
		return err
	}
	id := fmt.Sprint(f["id"])
	profiles, _ := f["service_profiles"].([]any)
	for _, p := range profiles {
		_, _ = c.network.Delete(ctx, c.network.ServiceURL("flavors", id, "service_profiles", fmt.Sprint(p)), nil)
	}
	if _, err := c.network.Delete(ctx, c.network.ServiceURL("flavors", id), nil); err != nil && !gophercloud.ResponseCodeIs(err, 404) {
		return err
	}
	for _, p := range profiles {
		sp, err := c.serviceProfile(ctx, fmt.Sprint(p))
		if err == nil && sp != nil && remove(sp) {
			_, _ = c.network.Delete(ctx, c.network.ServiceURL("service_profiles", fmt.Sprint(p)), nil)
		}
	}
	return nil
}

func (c *cloud) segmentRange(ctx context.Context, name string) (map[string]any, error) {
	return c.one(ctx, "network_segment_ranges", "network_segment_ranges", name)
}

func (c *cloud) deleteSegmentRange(ctx context.Context, name string) error {
	r, err := c.segmentRange(ctx, name)
	if err != nil || r == nil {
		return err
	}
	_, err = c.network.Delete(ctx, c.network.ServiceURL("network_segment_ranges", fmt.Sprint(r["id"])), nil)
	return err
}

// secretCloudsYAML is the clouds.yaml a credentials Secret holds: the harness's file as is, as an
// operator would paste it, or with every password replaced (the bad-credentials Secret). Each cloud
// the examples name must be in it.
func secretCloudsYAML(cloudsYAML string, need []string, password string) ([]byte, error) {
	body, err := os.ReadFile(cloudsYAML)
	if err != nil {
		return nil, err
	}
	var file struct {
		Clouds map[string]map[string]any `json:"clouds"`
	}
	if err := yaml.Unmarshal(body, &file); err != nil {
		return nil, fmt.Errorf("%s: %w", cloudsYAML, err)
	}
	for _, n := range need {
		if _, ok := file.Clouds[n]; !ok {
			return nil, fmt.Errorf("the examples use cloud %q, which %s does not define", n, cloudsYAML)
		}
	}
	if password == "" {
		return body, nil
	}
	for name, entry := range file.Clouds {
		auth, _ := entry["auth"].(map[string]any)
		if auth == nil {
			return nil, fmt.Errorf("%s cloud %q has no auth section", cloudsYAML, name)
		}
		auth["password"] = password
	}
	return yaml.Marshal(map[string]any{"clouds": file.Clouds})
}
