//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// poolTag is the subnet pools plugin's ownership tag (docs/plugins/neutron-subnet-pools.md).
const poolTag = "openstack-sync.io/managed-by=neutron-subnet-pools"

// poolGroupTag prefixes the tag recording the credential group that owns a pool.
const poolGroupTag = "openstack-sync.io/credential-group="

// What the subnet pool scenarios of TestLifecycle make in the real Neutron before the operator
// starts, each uniquely named for this tier: a scope the adopted CR names by id, a hand-made pool
// that CR adopts by name, and two pools no CR names, one owned (pruned) and one not (kept).
const (
	e2eScope          = "e2e-subnet-pools-scope-by-id"
	e2eAdoptedPool    = "E2E-ADOPTED-POOL"
	e2eOrphanOwned    = "E2E-ORPHAN-OWNED-POOL"
	e2eOrphanUnowned  = "E2E-ORPHAN-UNOWNED-POOL"
	e2eAdoptedPrefix  = "10.251.200.0/24"
	e2eAdoptedInitial = "10.251.200.0/25"
)

var subnetPools = kindNamed("NeutronSubnetPool")

func (c *cloud) subnetPool(ctx context.Context, name string) (map[string]any, error) {
	return c.one(ctx, "subnetpools", "subnetpools", name)
}

func (c *cloud) addressScope(ctx context.Context, name string) (map[string]any, error) {
	return c.one(ctx, "address-scopes", "address_scopes", name)
}

// create POSTs {key: body} to a Neutron collection and returns the new resource's id.
func (c *cloud) create(ctx context.Context, collection, key string, body map[string]any) (string, error) {
	var out map[string]map[string]any
	_, err := c.network.Post(ctx, c.network.ServiceURL(collection), map[string]any{key: body}, &out, &gophercloud.RequestOpts{OkCodes: []int{201}})
	if err != nil {
		return "", fmt.Errorf("create %s %v: %w", key, body["name"], err)
	}
	return fmt.Sprint(out[key]["id"]), nil
}

func (c *cloud) tagPool(ctx context.Context, id string, tags ...string) error {
	_, err := c.network.Put(ctx, c.network.ServiceURL("subnetpools", id, "tags"), map[string]any{"tags": tags}, nil,
		&gophercloud.RequestOpts{OkCodes: []int{200}})
	return err
}

// deletePool and deleteScope remove what a name finds (test clean-up); a scope goes after its pools.
func (c *cloud) deletePool(ctx context.Context, name string) error {
	p, err := c.subnetPool(ctx, name)
	if err != nil || p == nil {
		return err
	}
	_, err = c.network.Delete(ctx, c.network.ServiceURL("subnetpools", fmt.Sprint(p["id"])), nil)
	return err
}

func (c *cloud) deleteScope(ctx context.Context, name string) error {
	s, err := c.addressScope(ctx, name)
	if err != nil || s == nil {
		return err
	}
	_, err = c.network.Delete(ctx, c.network.ServiceURL("address-scopes", fmt.Sprint(s["id"])), nil)
	return err
}

// poolScenario is the subnet pools' part of TestLifecycle.
type poolScenario struct {
	h *harness
	// example is the example CR (its pool and scope are created by the plugin); adopted names
	// the hand-made pool by name and the hand-made scope by id.
	example, adopted *unstructured.Unstructured
	scopeID          string
	adoptedID        string
}

func newPoolScenario(t *testing.T, h *harness, example *unstructured.Unstructured) *poolScenario {
	s := &poolScenario{h: h, example: example}
	s.adopted = renamed(example, "-adopted", "spec", "name", "")
	require.NoError(t, unstructured.SetNestedField(s.adopted.Object, e2eAdoptedPool, "spec", "name"))
	require.NoError(t, unstructured.SetNestedField(s.adopted.Object, false, "spec", "shared"))
	require.NoError(t, unstructured.SetNestedStringSlice(s.adopted.Object, []string{"e2e"}, "spec", "tags"))
	require.NoError(t, unstructured.SetNestedSlice(s.adopted.Object, []any{map[string]any{"id": e2ePrefixes[0]["id"]}},
		"spec", "nautobot", "prefix_refs"))
	return s
}

func (s *poolScenario) exampleScope() string {
	n, _, _ := unstructured.NestedString(s.example.Object, "spec", "address_scope", "name")
	return n
}

// clean removes every pool and scope the scenario may have made, pools first.
func (s *poolScenario) clean(t *testing.T, ctx context.Context) {
	c := s.h.cloud
	for _, name := range []string{osName(s.example), e2eAdoptedPool, e2eOrphanOwned, e2eOrphanUnowned} {
		assert.NoError(t, c.deletePool(ctx, name))
	}
	for _, name := range []string{s.exampleScope(), e2eScope} {
		assert.NoError(t, c.deleteScope(ctx, name))
	}
}

// prepare makes the hand-made scope and pools before the operator starts.
func (s *poolScenario) prepare(t *testing.T, ctx context.Context) {
	c := s.h.cloud
	var err error
	s.scopeID, err = c.create(ctx, "address-scopes", "address_scope", map[string]any{"name": e2eScope, "ip_version": 4})
	require.NoError(t, err)
	require.NoError(t, unstructured.SetNestedMap(s.adopted.Object, map[string]any{"id": s.scopeID}, "spec", "address_scope"))
	s.adoptedID, err = c.create(ctx, "subnetpools", "subnetpool", map[string]any{"name": e2eAdoptedPool,
		"prefixes": []string{e2eAdoptedInitial}, "min_prefixlen": 26, "default_prefixlen": 26, "max_prefixlen": 29})
	require.NoError(t, err)
	owned, err := c.create(ctx, "subnetpools", "subnetpool", map[string]any{"name": e2eOrphanOwned, "prefixes": []string{"10.251.201.0/24"}})
	require.NoError(t, err)
	require.NoError(t, c.tagPool(ctx, owned, poolTag, poolGroupTag+s.h.groupOf(s.example)))
	_, err = c.create(ctx, "subnetpools", "subnetpool", map[string]any{"name": e2eOrphanUnowned, "prefixes": []string{"10.251.202.0/24"}})
	require.NoError(t, err)
}

// checkConverged: the example's pool and scope were created, the hand-made pool adopted by name
// into the scope named by id, the owned orphan pruned and the unowned one kept.
func (s *poolScenario) checkConverged(t *testing.T, ctx context.Context) {
	c := s.h.cloud
	scope, err := c.addressScope(ctx, s.exampleScope())
	require.NoError(t, err)
	require.NotNil(t, scope, "address scope %s was not created", s.exampleScope())
	p, err := c.subnetPool(ctx, osName(s.example))
	require.NoError(t, err)
	require.NotNil(t, p, "subnet pool %s missing in Neutron", osName(s.example))
	assert.Equal(t, scope["id"], p["address_scope_id"])
	assert.ElementsMatch(t, []any{"10.4.88.0/24", "204.232.163.128/25"}, p["prefixes"], "the CIDRs are Nautobot's")
	assert.Contains(t, p["tags"], poolTag)
	assert.Contains(t, p["tags"], poolGroupTag+s.h.groupOf(s.example), "the tags record the CR's credential group")
	assert.Equal(t, true, p["shared"])
	st := s.h.get(t, ctx, subnetPools, s.example.GetName())
	prefixes, _, _ := unstructured.NestedSlice(st.Object, "status", "prefixes")
	assert.Len(t, prefixes, 2, "status.prefixes links each CIDR to its Nautobot prefix")

	a, err := c.subnetPool(ctx, e2eAdoptedPool)
	require.NoError(t, err)
	require.NotNil(t, a)
	assert.Equal(t, s.adoptedID, a["id"], "adopted by name, not created anew")
	assert.Equal(t, s.scopeID, a["address_scope_id"], "the scope named by id")
	assert.Equal(t, []any{e2eAdoptedPrefix}, a["prefixes"], "grown to Nautobot's CIDR")
	assert.ElementsMatch(t, []any{"e2e", poolTag, poolGroupTag + s.h.groupOf(s.adopted)}, a["tags"])
	assert.EqualValues(t, "28", fmt.Sprint(a["default_prefixlen"]))

	gone, err := c.subnetPool(ctx, e2eOrphanOwned)
	require.NoError(t, err)
	assert.Nil(t, gone, "an owned pool no CR names is pruned")
	kept, err := c.subnetPool(ctx, e2eOrphanUnowned)
	require.NoError(t, err)
	assert.NotNil(t, kept, "a pool without the ownership tag is never pruned")
}

// checkScopesKept: the scopes outlive the pools (the plugin has no grant to delete one).
func (s *poolScenario) checkScopesKept(t *testing.T, ctx context.Context) {
	for _, name := range []string{s.exampleScope(), e2eScope} {
		sc, err := s.h.cloud.addressScope(ctx, name)
		require.NoError(t, err)
		assert.NotNil(t, sc, "address scope %s: the plugin never deletes a scope", name)
	}
}

func (s *poolScenario) poolGone(ctx context.Context) (bool, error) {
	p, err := s.h.cloud.subnetPool(ctx, osName(s.example))
	return p == nil, err
}
