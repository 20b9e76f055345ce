package main

import (
	"net/url"
	"strconv"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/experimental"
	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/invalidspec"
)

const (
	poolsPath  = "v2.0/subnetpools"
	scopesPath = "v2.0/address-scopes"
)

// pool is a Neutron subnet pool as the plugin reads it. Neutron answers the prefix lengths as
// strings from show and list and as numbers from an update, so they are read either way.
type pool struct {
	ID             string   `json:"id"`
	Name           string   `json:"name"`
	ProjectID      string   `json:"project_id"`
	Description    string   `json:"description"`
	Prefixes       []string `json:"prefixes"`
	IPVersion      int      `json:"ip_version"`
	MinPrefixLen   flexInt  `json:"min_prefixlen"`
	DefPrefixLen   flexInt  `json:"default_prefixlen"`
	MaxPrefixLen   flexInt  `json:"max_prefixlen"`
	Shared         bool     `json:"shared"`
	IsDefault      bool     `json:"is_default"`
	AddressScopeID *string  `json:"address_scope_id"`
	Tags           []string `json:"tags"`
}

func (p *pool) scopeID() string {
	if p.AddressScopeID == nil {
		return ""
	}
	return *p.AddressScopeID
}

// flexInt reads a number or a string of digits.
type flexInt int

func (f *flexInt) UnmarshalJSON(b []byte) error {
	var n int
	if err := experimental.DecodeJSON(b, &n); err == nil {
		*f = flexInt(n)
		return nil
	}
	var s string
	if err := experimental.DecodeJSON(b, &s); err != nil {
		return err
	}
	if s == "" {
		*f = 0
		return nil
	}
	n, err := strconv.Atoi(s)
	*f = flexInt(n)
	return err
}

type scope struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	IPVersion int    `json:"ip_version"`
	ProjectID string `json:"project_id"`
	Shared    bool   `json:"shared"`
}

// neutron is the Neutron side of one reconcile: the network client and the group's cache of
// address scopes (many pools share one).
type neutron struct {
	c      *pdk.ServiceClient
	scopes map[[3]string]*scope
}

const scopesKey = "neutron-subnet-pools/scopes"

func newNeutron(ctx *pdk.Context) *neutron {
	scopes, _ := ctx.Cache()[scopesKey].(map[[3]string]*scope)
	if scopes == nil {
		scopes = map[[3]string]*scope{}
		ctx.Cache()[scopesKey] = scopes
	}
	return &neutron{c: ctx.OpenStack("network"), scopes: scopes}
}

// ensureAddressScope finds, adopts or creates the scope a spec names (by id: it must exist; by
// name: found in the pool's family, created when absent unless create is false). The operator
// never deletes an address scope: it outlives any one pool. nil when the spec names none.
func (n *neutron) ensureAddressScope(spec *Spec, version int) (*scope, error) {
	as := spec.AddressScope
	if as == nil || (as.ID == "" && as.Name == "") {
		return nil, nil
	}
	var s *scope
	if as.ID != "" {
		var out struct {
			AddressScope scope `json:"address_scope"`
		}
		err := n.c.Get(scopesPath+"/"+url.PathEscape(as.ID), nil, &out)
		if pdk.IsNotFound(err) {
			return nil, invalidspec.Errorf("Address scope '%s' was not found", as.ID)
		}
		if err != nil {
			return nil, err
		}
		s = &out.AddressScope
	} else {
		project := as.ProjectID
		if project == "" {
			project = spec.ProjectID
		}
		key := [3]string{as.Name, strconv.Itoa(version), project}
		if s = n.scopes[key]; s == nil {
			q := url.Values{"name": {as.Name}, "ip_version": {strconv.Itoa(version)}}
			if project != "" {
				q.Set("project_id", project)
			}
			var out struct {
				AddressScopes []scope `json:"address_scopes"`
			}
			if err := n.c.Get(scopesPath, q, &out); err != nil {
				return nil, err
			}
			var found []scope
			for _, x := range out.AddressScopes {
				if x.Name == as.Name {
					found = append(found, x)
				}
			}
			switch {
			case len(found) > 1:
				return nil, invalidspec.Errorf("Address scope name '%s' matched %d scopes; set spec.address_scope.id or project_id", as.Name, len(found))
			case len(found) == 1:
				s = &found[0]
			case as.Create != nil && !*as.Create:
				return nil, invalidspec.Errorf("Address scope '%s' was not found for IPv%d and spec.address_scope.create is false", as.Name, version)
			default:
				shared := as.Shared == nil || *as.Shared
				body := map[string]any{"name": as.Name, "ip_version": version, "shared": shared}
				if project != "" {
					body["project_id"] = project
				}
				var created struct {
					AddressScope scope `json:"address_scope"`
				}
				if err := n.c.Post(scopesPath, map[string]any{"address_scope": body}, &created); err != nil {
					return nil, err
				}
				s = &created.AddressScope
			}
			n.scopes[key] = s
		}
	}
	if s.IPVersion != 0 && s.IPVersion != version {
		return nil, invalidspec.Errorf("Address scope '%s' is IPv%d, but subnet pool '%s' is IPv%d", s.ID, s.IPVersion, spec.Name, version)
	}
	return s, nil
}

// findPool returns the pool of the spec's name (and project), nil when there is none.
func (n *neutron) findPool(spec *Spec) (*pool, error) {
	q := url.Values{"name": {spec.Name}}
	if spec.ProjectID != "" {
		q.Set("project_id", spec.ProjectID)
	}
	var out struct {
		SubnetPools []pool `json:"subnetpools"`
	}
	if err := n.c.Get(poolsPath, q, &out); err != nil {
		return nil, err
	}
	var found []pool
	for _, p := range out.SubnetPools {
		if p.Name == spec.Name {
			found = append(found, p)
		}
	}
	switch len(found) {
	case 0:
		return nil, nil
	case 1:
		return &found[0], nil
	}
	return nil, invalidspec.Errorf("Subnet pool name '%s' matched %d pools; set spec.project_id", spec.Name, len(found))
}

// checkDefaultConflict fails early when another pool is already the default of the family:
// Neutron allows one and answers a second with a generic InvalidInput. A pool does not conflict
// with itself. is_default false asks nothing.
func (n *neutron) checkDefaultConflict(spec *Spec, version int, existing *pool) error {
	if !spec.IsDefault {
		return nil
	}
	var out struct {
		SubnetPools []pool `json:"subnetpools"`
	}
	q := url.Values{"is_default": {"true"}, "ip_version": {strconv.Itoa(version)}}
	if err := n.c.Get(poolsPath, q, &out); err != nil {
		return err
	}
	for _, o := range out.SubnetPools {
		if !o.IsDefault || (o.IPVersion != 0 && o.IPVersion != version) || (existing != nil && o.ID == existing.ID) {
			continue
		}
		return invalidspec.Errorf("Subnet pool '%s' requests is_default=true for IPv%d, but pool '%s' (%s) is already the default "+
			"for that family. Neutron allows only one default subnet pool per IP family; clear is_default on the other pool or on this CR.",
			spec.Name, version, o.Name, o.ID)
	}
	return nil
}

func (n *neutron) createPool(attrs map[string]any) (*pool, error) {
	var out struct {
		SubnetPool pool `json:"subnetpool"`
	}
	if err := n.c.Post(poolsPath, map[string]any{"subnetpool": attrs}, &out); err != nil {
		return nil, err
	}
	return &out.SubnetPool, nil
}

func (n *neutron) updatePool(id string, attrs map[string]any) (*pool, error) {
	var out struct {
		SubnetPool pool `json:"subnetpool"`
	}
	if err := n.c.Put(poolsPath+"/"+url.PathEscape(id), map[string]any{"subnetpool": attrs}, &out); err != nil {
		return nil, err
	}
	return &out.SubnetPool, nil
}

func (n *neutron) setTags(id string, tags []string) error {
	return n.c.Put(poolsPath+"/"+url.PathEscape(id)+"/tags", map[string]any{"tags": tags}, nil)
}
