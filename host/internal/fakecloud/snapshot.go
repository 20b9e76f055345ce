package fakecloud

import (
	"encoding/json"
	"fmt"
)

// snapshotVersion changes when the snapshot's shape does (2: runbooks moved into Known).
const snapshotVersion = 2

// snapshot is everything a cloud holds that a later cloud must hold again for a plugin to carry
// on (`openstack-sync-dev run --state`): the projects' ids, every resource and the generic
// collections with their objects. Tokens, users' ids and request logs are not kept: a new cloud
// issues its own.
type snapshot struct {
	Version     int               `json:"version"`
	Projects    map[string]string `json:"projects"`
	Flavors     []*Flavor         `json:"flavors,omitempty"`
	Profiles    []*ServiceProfile `json:"service_profiles,omitempty"`
	Routers     []*routerRec      `json:"routers,omitempty"`
	Ranges      []*rangeRec       `json:"segment_ranges,omitempty"`
	Pools       []*subnetPoolRec  `json:"subnet_pools,omitempty"`
	Collections []savedCollection `json:"collections,omitempty"`
	// Known are the collections osapi knows (Keystone projects, Neutron networks, ...).
	Known json.RawMessage `json:"known"`
}

type savedCollection struct {
	Collection
	Objects []map[string]any `json:"objects"`
}

// Save returns what the cloud holds, for Restore in another cloud.
func (c *Cloud) Save() ([]byte, error) {
	known, err := c.known.MarshalJSON()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s := snapshot{Version: snapshotVersion, Projects: c.projects, Flavors: c.flavors, Profiles: c.profiles,
		Routers: c.routers, Ranges: c.ranges, Pools: c.pools, Known: known}
	for _, col := range c.collections {
		s.Collections = append(s.Collections, savedCollection{Collection: col.Collection, Objects: col.objects})
	}
	return json.Marshal(s)
}

// Restore makes a new cloud hold what Save saved of another; call it before the cloud serves
// anything. The clouds' credentials stay this cloud's own.
func (c *Cloud) Restore(b []byte) error {
	var s snapshot
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("fakecloud: reading a saved cloud: %w", err)
	}
	if s.Version != snapshotVersion {
		return fmt.Errorf("fakecloud: a saved cloud of version %d; this cloud reads version %d", s.Version, snapshotVersion)
	}
	for _, name := range []string{"admin", "demo", "service"} {
		if s.Projects[name] == "" {
			return fmt.Errorf("fakecloud: the saved cloud has no %s project", name)
		}
	}
	if err := c.known.UnmarshalJSON(s.Known); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.projects, c.flavors, c.profiles, c.routers, c.ranges = s.Projects, s.Flavors, s.Profiles, s.Routers, s.Ranges
	c.pools = s.Pools
	c.flavorIDs.reset()
	c.profileIDs.reset()
	c.collections = nil
	for _, col := range s.Collections {
		c.collections = append(c.collections, &collection{Collection: col.Collection, objects: col.Objects})
	}
	return nil
}
