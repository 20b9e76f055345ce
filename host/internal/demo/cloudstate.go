package demo

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/openstack-sync/openstack-sync/host/internal/fakecloud"
)

// cloudResource is one OpenStack resource as the demo reports it.
type cloudResource struct {
	Kind   string
	ID     string
	Name   string
	Fields map[string]any
}

// cloudState is everything the fake cloud holds that a plugin can change, keyed by kind/id.
type cloudState map[string]cloudResource

func captureCloud(c *fakecloud.Cloud) cloudState {
	st := cloudState{}
	add := func(kind, id, name string, v any) {
		st[kind+"/"+id] = cloudResource{Kind: kind, ID: id, Name: name, Fields: fieldsOf(v)}
	}
	for _, f := range c.Flavors() {
		add("network flavor", f.ID, f.Name, f)
	}
	for _, p := range c.ServiceProfiles() {
		add("service profile", p.ID, p.Description, p)
	}
	for _, s := range c.SegmentRanges() {
		add("segment range", s.ID, s.Name, s)
	}
	for _, rb := range c.Runbooks() {
		add("ironic runbook", rb.UUID, rb.Name, rb)
	}
	for _, p := range c.SubnetPools() {
		add("subnet pool", p.ID, p.Name, p)
	}
	for _, s := range c.Known("network:address-scopes") {
		id, _ := s["id"].(string)
		name, _ := s["name"].(string)
		add("address scope", id, name, s)
	}
	return st
}

func fieldsOf(v any) map[string]any {
	data, _ := json.Marshal(v)
	var m map[string]any
	_ = json.Unmarshal(data, &m)
	return m
}

// cloudChange is one created, updated or deleted resource.
type cloudChange struct {
	Action   string // created, updated, deleted
	Resource cloudResource
	// Changed names the fields an update changed.
	Changed []string
}

func (c cloudChange) String() string {
	name := c.Resource.Name
	if name == "" {
		name = "(unnamed)"
	}
	s := fmt.Sprintf("%-8s %s %s [%s]", c.Action, c.Resource.Kind, name, shortID(c.Resource.ID))
	if len(c.Changed) > 0 {
		s += ": " + strings.Join(c.Changed, ", ")
	}
	return s
}

// diffCloud lists what changed from before to after, sorted by kind, name and action.
func diffCloud(before, after cloudState) []cloudChange {
	var out []cloudChange
	for k, a := range after {
		b, ok := before[k]
		if !ok {
			out = append(out, cloudChange{Action: "created", Resource: a})
			continue
		}
		if changed := changedFields(b.Fields, a.Fields); len(changed) > 0 {
			out = append(out, cloudChange{Action: "updated", Resource: a, Changed: changed})
		}
	}
	for k, b := range before {
		if _, ok := after[k]; !ok {
			out = append(out, cloudChange{Action: "deleted", Resource: b})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		x, y := out[i], out[j]
		if x.Resource.Kind != y.Resource.Kind {
			return x.Resource.Kind < y.Resource.Kind
		}
		if x.Resource.Name != y.Resource.Name {
			return x.Resource.Name < y.Resource.Name
		}
		return x.Action < y.Action
	})
	return out
}

func changedFields(before, after map[string]any) []string {
	var out []string
	for k, v := range after {
		bj, _ := json.Marshal(before[k])
		aj, _ := json.Marshal(v)
		if string(bj) != string(aj) {
			out = append(out, k)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
