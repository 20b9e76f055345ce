// Command neutron-segment-ranges is the openstack-sync plugin that converges NeutronSegmentRange
// CRs into Neutron network segment ranges (docs/plugins/neutron-segment-ranges.md).
//
// The plugin is built on pdk/lifecycle: a CR binds one range (status.id), found on its first run by
// exact name and adopted, or imported by id or filter (spec.import, unmanaged). Under this
// project's profile the plugin never deletes a range, so it carries no ownership marker and its
// cleanup policy is NONE whatever PRUNE says: deleting a CR always leaves the range (detach).
// Under the understack profile it works as the original operator did: the range's name carries
// the prefix understack-sr:, and PRUNE=true prunes what carries it (markers.go).
package main

import (
	"context"
	"fmt"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/experimental"
	"github.com/openstack-sync/openstack-sync/pdk/lifecycle"
	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/compat"
	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/invalidspec"
)

// metadata is what the host and operators learn about the plugin.
var metadata = pdk.Metadata{
	Name:        "neutron-segment-ranges",
	Noun:        "segment range",
	EnvPrefix:   "NEUTRON_SEGMENT_RANGE",
	BindingName: "neutron-segment-ranges",
	// Same CRs, settings and answers: same requests and results (no clock, no randomness), so
	// a converged run may be replayed without the module (docs/abi.md, "The run replay").
	Deterministic: true,
	Grants: []pdk.Grant{
		{Service: "network", Methods: []string{"GET", "POST"}, Paths: []string{rangesPath}},
		// DELETE only for the prune of the understack profile, whose ranges carry a marker.
		{Service: "network", Methods: []string{"GET", "PUT", "DELETE"}, Paths: []string{rangesPath + "/*"}},
	},
	Lifecycle: true,
	// The plugin reads status.id and nothing else of the status: the host sends only that.
	StatusKeys: []string{"id"},
	Cleanup:    pdk.Cleanup{WhenPrune: pdk.CleanupNone, WhenNoPrune: pdk.CleanupNone},
	// Under this project's identifiers a range carries no marker and is never pruned, so a group's
	// prune has nothing of another group's to touch: per group, like every first-party plugin's
	// (docs/contract.md §7.1).
	PruneScope: pdk.PruneScopeGroup,
	// Under the original operator's identifiers a range carries its owner's name prefix, and a
	// CR deleted with PRUNE=true has its range pruned, as the original did (markers.go); the prefix
	// records no credential group, so every group spares every group's names.
	Profiles: map[string]pdk.ProfileMetadata{
		string(compat.Understack): {PruneScope: pdk.PruneScopeAll,
			Cleanup: pdk.Cleanup{WhenPrune: pdk.CleanupFinalizedPrune, WhenNoPrune: pdk.CleanupNone}},
	},
}

func init() {
	pdk.Register(pdk.Plugin{Metadata: metadata, WaitForAPI: waitForAPI, Reconcile: reconcileCR, Prune: pruneCR, Remark: remarkCR})
}

func main() {}

func network(ctx *pdk.Context) *pdk.ServiceClient { return ctx.OpenStack("network") }

// waitForAPI lists one segment range: it proves Neutron answers and that the credentials may read
// segment ranges (admin-only by default policy), with the same grant reconcile needs. A policy
// refusal will not go away by waiting, so it is permanent.
func waitForAPI(ctx *pdk.Context) error {
	err := network(ctx).Call("GET", rangesPath, map[string][]string{"limit": {"1"}}, nil, nil)
	if pdk.IsRefused(err) {
		return pdk.Permanent(fmt.Errorf("Neutron refused to list segment ranges (the credentials need the admin role): %w", err))
	}
	return err
}

const cacheKey = "segment-ranges"

// reconcileCR converges one CR, naming under the understack profile only the reasons the
// original named (none: its failures were all ReconcileError).
func reconcileCR(ctx *pdk.Context, req *pdk.ReconcileRequest) (*pdk.Result, error) {
	own, err := ownershipFor(ctx)
	if err != nil {
		return nil, err
	}
	return own.Profile.OriginalReasons(reconcileRange(ctx, req, own))
}

func reconcileRange(ctx *pdk.Context, req *pdk.ReconcileRequest, own ownership) (*pdk.Result, error) {
	if unchanged(ctx, req) {
		return experimental.Recorded(), nil
	}
	var spec Spec
	if err := req.DecodeSpec(&spec); err != nil {
		return lifecycle.Outcome{Progress: lifecycle.Terminal(lifecycle.ReasonInvalidConfiguration,
			pdk.WithReason(invalidspec.Reason, err))}.Result(), nil
	}
	svc := network(ctx)
	idx, err := groupIndex(ctx, svc)
	if err != nil {
		return lifecycle.Outcome{Progress: lifecycle.Transient(err)}.Result(), nil
	}
	// Under a profile that marks its ranges by name the driver works with the name in Neutron.
	spec.Name = own.Own.neutronName(spec.Name)
	id, _ := req.Status["id"].(string)
	out := driver.Reconcile(context.Background(), &rangeCR{spec: spec, statusID: id, svc: svc, idx: idx, own: own})
	return out.Result(), nil
}

// groupIndex returns the group's index of segment ranges, listing them the first time.
func groupIndex(ctx *pdk.Context, svc *pdk.ServiceClient) (*index, error) {
	idx, _ := ctx.Cache()[cacheKey].(*index)
	if idx != nil {
		return idx, nil
	}
	idx, err := loadIndex(svc)
	if err != nil {
		return nil, err
	}
	ctx.Cache()[cacheKey] = idx
	return idx, nil
}

// unchanged asks the host's convergence memo whether this CR can be reported as last time
// (docs/abi.md, "The convergence memo"). A CR bound to a range (status.id) is judged on its input
// (spec and status, which the host compares) and that range alone: the lifecycle driver neither
// adopts nor imports once the id resolves. The range as the group's index holds it, every field
// the plugin reads, is the evidence. A CR without status.id, or whose range is not in the index,
// is reconciled in full.
func unchanged(ctx *pdk.Context, req *pdk.ReconcileRequest) bool {
	id, _ := req.Status["id"].(string)
	if id == "" {
		return false
	}
	idx, err := groupIndex(ctx, network(ctx))
	if err != nil {
		return false
	}
	r, ok := idx.byID(id)
	return ok && experimental.Unchanged(ctx, r.evidence())
}

// pruneCR deletes the ranges the profile owns that no CR names (the understack profile only).
func pruneCR(ctx *pdk.Context, req *pdk.PruneRequest) error {
	own, err := ownershipFor(ctx)
	if err != nil {
		return err
	}
	var names []struct {
		Name string `json:"name"`
	}
	if err := req.DecodeSpecs(&names); err != nil {
		return err
	}
	desired := make([]Spec, len(names))
	for i, n := range names {
		desired[i].Name = n.Name
	}
	return prune(network(ctx), own.Own, desired, req.AuthoritativeEmpty, func(format string, args ...any) {
		ctx.Logf(pdk.LevelInfo, format, args...)
	})
}
