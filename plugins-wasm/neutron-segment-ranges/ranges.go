package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/lifecycle"
	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/compat"
	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/invalidspec"
)

const rangesPath = "v2.0/network_segment_ranges"

// Spec is NeutronSegmentRange.spec without cloudCredentialsRef. The range's own fields sit at the
// top of spec (the CRs predate the lifecycle), beside the shared lifecycle fields.
type Spec struct {
	Name            string `json:"name"`
	NetworkType     string `json:"network_type"`
	PhysicalNetwork string `json:"physical_network"`
	Minimum         *int64 `json:"minimum"`
	Maximum         *int64 `json:"maximum"`
	// Shared defaults to true when absent, as in the CRD.
	Shared    *bool  `json:"shared"`
	ProjectID string `json:"project_id"`

	lifecycle.SharedFields[ImportFilter]
}

// ImportFilter is spec.import.filter: every field set must match.
type ImportFilter struct {
	Name            string `json:"name,omitempty"`
	NetworkType     string `json:"network_type,omitempty"`
	PhysicalNetwork string `json:"physical_network,omitempty"`
	ProjectID       string `json:"project_id,omitempty"`
}

func (f ImportFilter) matches(r segmentRange) bool {
	return (f.Name == "" || r.Name == f.Name) && (f.NetworkType == "" || r.NetworkType == f.NetworkType) &&
		(f.PhysicalNetwork == "" || r.physnet() == f.PhysicalNetwork) && (f.ProjectID == "" || r.ProjectID == f.ProjectID)
}

// validateLifecycle checks the shared fields as the CRD's rules do. shared is left out of the
// resource fields: the API server fills in its default.
func (s Spec) validateLifecycle() error {
	hasResource := s.Name != "" || s.NetworkType != "" || s.PhysicalNetwork != "" || s.Minimum != nil || s.Maximum != nil ||
		s.ProjectID != ""
	if err := s.SharedFields.Validate(hasResource); err != nil {
		return invalidspec.Errorf("%v", err)
	}
	return nil
}

func (s Spec) shared() bool { return s.Shared == nil || *s.Shared }

// segmentRange is the part of a Neutron network_segment_range the plugin reads.
type segmentRange struct {
	ID              string  `json:"id"`
	Name            string  `json:"name"`
	NetworkType     string  `json:"network_type"`
	PhysicalNetwork *string `json:"physical_network"`
	Minimum         int64   `json:"minimum"`
	Maximum         int64   `json:"maximum"`
	Shared          bool    `json:"shared"`
	ProjectID       string  `json:"project_id"`
}

// evidence is the range as the convergence memo is shown it: every field the plugin reads, the
// texts length-prefixed so no two ranges read alike (an absent physical network apart from an
// empty one).
func (r segmentRange) evidence() []byte {
	b := make([]byte, 0, 128)
	text := func(s string) {
		b = strconv.AppendInt(b, int64(len(s)), 10)
		b = append(append(b, ':'), s...)
	}
	text(r.ID)
	text(r.Name)
	text(r.NetworkType)
	text(r.ProjectID)
	if r.PhysicalNetwork == nil {
		b = append(b, '-')
	} else {
		text(*r.PhysicalNetwork)
	}
	b = strconv.AppendInt(append(b, ' '), r.Minimum, 10)
	b = strconv.AppendInt(append(b, ' '), r.Maximum, 10)
	return strconv.AppendBool(append(b, ' '), r.Shared)
}

func (r segmentRange) physnet() string {
	if r.PhysicalNetwork == nil {
		return ""
	}
	return *r.PhysicalNetwork
}

var validTypes = map[string]bool{"vlan": true, "vxlan": true, "gre": true, "geneve": true}

// validate rejects specs Neutron would refuse or that could never converge, naming the field.
func (s Spec) validate() error {
	var errs []string
	if s.Name == "" {
		errs = append(errs, "spec.name must be set")
	}
	if !validTypes[s.NetworkType] {
		errs = append(errs, fmt.Sprintf("spec.network_type must be one of vlan, vxlan, gre, geneve; got %q", s.NetworkType))
	}
	if s.Minimum == nil || s.Maximum == nil {
		errs = append(errs, "spec.minimum and spec.maximum must both be set")
	} else {
		if *s.Minimum < 1 {
			errs = append(errs, fmt.Sprintf("spec.minimum must be at least 1; got %d", *s.Minimum))
		}
		if *s.Minimum > *s.Maximum {
			errs = append(errs, fmt.Sprintf("spec.minimum %d is greater than spec.maximum %d: the range is empty", *s.Minimum, *s.Maximum))
		}
	}
	switch {
	case s.NetworkType == "vlan" && s.PhysicalNetwork == "":
		errs = append(errs, "spec.physical_network is required for network_type vlan")
	case s.NetworkType != "vlan" && validTypes[s.NetworkType] && s.PhysicalNetwork != "":
		errs = append(errs, fmt.Sprintf("spec.physical_network must not be set for network_type %s", s.NetworkType))
	}
	if !s.shared() && s.ProjectID == "" {
		errs = append(errs, "spec.project_id is required when spec.shared is false")
	}
	if len(errs) > 0 {
		return invalidspec.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// immutableError is a difference Neutron cannot apply in place; the CR reports reason
// ImmutableFieldChanged.
type immutableError struct{ msg string }

func (e *immutableError) Error() string { return e.msg }

// index holds every segment range of one credential group, read by one paginated list the first
// time a CR of the group needs it, and kept current by the plugin's own writes. A converged group
// therefore costs one list however many CRs it has.
type index struct {
	ranges []segmentRange
	// at is each range's position by id, built on first use: a group of N CRs bound by id would
	// otherwise scan the list N times (a million comparisons at 1,000, in the sandbox ~75 µs a CR).
	at map[string]int
}

// byID returns the range with id, as the index holds it.
func (idx *index) byID(id string) (segmentRange, bool) {
	if idx.at == nil {
		idx.at = make(map[string]int, len(idx.ranges))
		for i, r := range idx.ranges {
			if _, dup := idx.at[r.ID]; !dup {
				idx.at[r.ID] = i
			}
		}
	}
	i, ok := idx.at[id]
	if !ok {
		return segmentRange{}, false
	}
	return idx.ranges[i], true
}

func loadIndex(svc *pdk.ServiceClient) (*index, error) {
	ranges, err := pdk.ListNeutron(svc, rangesPath, "network_segment_ranges", nil, func(r *segmentRange) string { return r.ID })
	if err != nil {
		return nil, fmt.Errorf("list segment ranges: %w", err)
	}
	return &index{ranges: ranges}, nil
}

// find returns the ranges the spec names: same name and, for an unshared range, same project.
func (idx *index) find(s Spec) []segmentRange {
	var out []segmentRange
	for _, r := range idx.ranges {
		if r.Name != s.Name {
			continue
		}
		if !s.shared() && r.ProjectID != s.ProjectID {
			continue
		}
		out = append(out, r)
	}
	return out
}

func (idx *index) put(r segmentRange) {
	if _, ok := idx.byID(r.ID); ok {
		idx.ranges[idx.at[r.ID]] = r
		return
	}
	idx.at[r.ID] = len(idx.ranges)
	idx.ranges = append(idx.ranges, r)
}

// reconcile converges one managed segment range without a recorded status.id, as every CR did
// before the lifecycle: the range is found by its exact name (adoption), so an out-of-band range
// of that name is adopted; it carries no marker because this plugin never deletes.
func reconcile(svc *pdk.ServiceClient, idx *index, s Spec) error {
	out := driver.Reconcile(context.Background(), &rangeCR{spec: s, svc: svc, idx: idx, own: ownershipOf(compat.OpenStackSync)})
	if out.Progress.IsDone() {
		return nil
	}
	if err := out.Progress.Err(); err != nil {
		return err
	}
	return errors.New(out.Progress.Message())
}

// create makes the range; nothing fallible follows the POST.
func create(svc *pdk.ServiceClient, idx *index, s Spec) (*segmentRange, error) {
	body := map[string]any{
		"name":         s.Name,
		"network_type": s.NetworkType,
		"minimum":      *s.Minimum,
		"maximum":      *s.Maximum,
		"shared":       s.shared(),
	}
	if s.PhysicalNetwork != "" {
		body["physical_network"] = s.PhysicalNetwork
	}
	if !s.shared() {
		body["project_id"] = s.ProjectID
	}
	var resp struct {
		Range segmentRange `json:"network_segment_range"`
	}
	if err := svc.Call("POST", rangesPath, nil, map[string]any{"network_segment_range": body}, &resp); err != nil {
		return nil, fmt.Errorf("create segment range %q: %w", s.Name, err)
	}
	if resp.Range.ID == "" {
		return nil, fmt.Errorf("create segment range %q: Neutron answered without an id", s.Name)
	}
	idx.put(resp.Range)
	return &resp.Range, nil
}

// update changes the bounds of an existing range in place, after checking nothing Neutron cannot
// change differs.
func update(svc *pdk.ServiceClient, idx *index, cur segmentRange, s Spec) error {
	if err := immutableDiff(cur, s); err != nil {
		return err
	}
	changes := map[string]any{}
	if cur.Minimum != *s.Minimum {
		changes["minimum"] = *s.Minimum
	}
	if cur.Maximum != *s.Maximum {
		changes["maximum"] = *s.Maximum
	}
	if len(changes) == 0 {
		return nil
	}
	var resp struct {
		Range segmentRange `json:"network_segment_range"`
	}
	if err := svc.Call("PUT", rangesPath+"/"+url.PathEscape(cur.ID), nil,
		map[string]any{"network_segment_range": changes}, &resp); err != nil {
		return fmt.Errorf("update segment range %q (%s): %w", s.Name, cur.ID, err)
	}
	if resp.Range.ID == "" {
		cur.Minimum, cur.Maximum = *s.Minimum, *s.Maximum
		resp.Range = cur
	}
	idx.put(resp.Range)
	return nil
}

// immutableDiff names every field Neutron will not update in place ("Cannot update read-only
// attribute"), so the operator learns which one to restore or which range to recreate.
func immutableDiff(cur segmentRange, s Spec) error {
	var diffs []string
	add := func(field string, have, want any) {
		diffs = append(diffs, fmt.Sprintf("%s: have=%s want=%s", field, repr(have), repr(want)))
	}
	if cur.NetworkType != s.NetworkType {
		add("network_type", cur.NetworkType, s.NetworkType)
	}
	if cur.physnet() != s.PhysicalNetwork {
		add("physical_network", cur.physnet(), s.PhysicalNetwork)
	}
	if cur.Shared != s.shared() {
		add("shared", cur.Shared, s.shared())
	}
	if !s.shared() && cur.ProjectID != s.ProjectID {
		add("project_id", cur.ProjectID, s.ProjectID)
	}
	if len(diffs) == 0 {
		return nil
	}
	return &immutableError{msg: fmt.Sprintf("segment range %q (%s) differs in fields Neutron cannot change in place: %s; "+
		"restore the spec or delete the Neutron range so it is recreated", s.Name, cur.ID, strings.Join(diffs, "; "))}
}

func repr(v any) string {
	if s, ok := v.(string); ok {
		return "'" + s + "'"
	}
	return fmt.Sprint(v)
}
