// Command neutron-router-flavors is the openstack-sync plugin that converges NeutronRouterFlavor
// CRs into Neutron L3 flavors and their service profiles (docs/plugins/neutron-router-flavors.md).
package main

import (
	"context"
	"fmt"
	"net/url"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/experimental"
	"github.com/openstack-sync/openstack-sync/pdk/lifecycle"
	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/compat"
	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/invalidspec"
)

var metadata = pdk.Metadata{
	Name:        "neutron-router-flavors",
	Noun:        "router flavor",
	EnvPrefix:   "NEUTRON_ROUTER_FLAVOR",
	BindingName: "neutron-router-flavors",
	// Same CRs, settings and answers: same requests and results (no clock, no randomness), so
	// a converged run may be replayed without the module (docs/abi.md, "The run replay").
	Deterministic: true,
	Grants: []pdk.Grant{
		{Service: "network", Methods: []string{"GET", "POST"}, Paths: []string{flavorsPath, profilesPath}},
		{Service: "network", Methods: []string{"GET", "PUT", "DELETE"}, Paths: []string{flavorsPath + "/*", profilesPath + "/*"}},
		{Service: "network", Methods: []string{"POST"}, Paths: []string{flavorsPath + "/*/service_profiles"}},
		{Service: "network", Methods: []string{"DELETE"}, Paths: []string{flavorsPath + "/*/service_profiles/*"}},
		// Prune checks that no router uses a flavor before deleting it.
		{Service: "network", Methods: []string{"GET"}, Paths: []string{routersPath}},
	},
	Cleanup: pdk.Cleanup{WhenPrune: pdk.CleanupFinalizedPrune, WhenNoPrune: pdk.CleanupBestEffortPrune},
	// The markers record the credential group (markers.go), so each group is pruned on its own and
	// one group's failure holds back no other group's deletions (docs/contract.md §7.1); the
	// original's markers record none, so under its profile every group spares every group's names.
	PruneScope: pdk.PruneScopeGroup,
	Profiles: map[string]pdk.ProfileMetadata{
		string(compat.Understack): {PruneScope: pdk.PruneScopeAll,
			Cleanup: pdk.Cleanup{WhenPrune: pdk.CleanupFinalizedPrune, WhenNoPrune: pdk.CleanupBestEffortPrune}},
	},
	Lifecycle: true,
	// The plugin reads status.id and nothing else of the status: the host sends only that.
	StatusKeys: []string{"id"},
	// Its prune reads only each desired spec's name: the host sends only that (at 20,000
	// site-shaped flavors, the whole specs beside the lists of every flavor and profile did not
	// fit the guest's 32 MiB).
	PruneKeys: []string{"name"},
}

func init() {
	pdk.Register(pdk.Plugin{Metadata: metadata, WaitForAPI: waitForAPI, Reconcile: reconcileCR, Prune: pruneCR, Remark: remarkCR})
}

func main() {}

func network(ctx *pdk.Context) *pdk.ServiceClient { return ctx.OpenStack("network") }

func logger(ctx *pdk.Context, level pdk.LogLevel) logf {
	return func(format string, args ...any) { ctx.Logf(level, format, args...) }
}

// waitForAPI lists one flavor: Neutron answers and the flavors extension is loaded. A 404 (no
// flavors extension) or a policy refusal will not change by waiting.
func waitForAPI(ctx *pdk.Context) error {
	err := network(ctx).Call("GET", flavorsPath, url.Values{"limit": {"1"}}, nil, nil)
	switch pdk.StatusCode(err) {
	case pdk.StatusNotFound:
		return pdk.Permanent(fmt.Errorf("Neutron has no flavors API (enable the flavors service plugin): %w", err))
	case pdk.StatusForbidden, pdk.StatusUnauthorized:
		return pdk.Permanent(fmt.Errorf("Neutron refused to list flavors: %w", err))
	}
	return err
}

const cacheKey = "neutron-state"

// reconcileCR converges one CR, naming under the understack profile only the reasons the
// original named (none: its failures were all ReconcileError).
func reconcileCR(ctx *pdk.Context, req *pdk.ReconcileRequest) (*pdk.Result, error) {
	own, err := groupOwnership(ctx, req.Credentials)
	if err != nil {
		return nil, err
	}
	return own.Profile.OriginalReasons(reconcileFlavor(ctx, req, own))
}

func reconcileFlavor(ctx *pdk.Context, req *pdk.ReconcileRequest, own ownership) (*pdk.Result, error) {
	st, _ := ctx.Cache()[cacheKey].(*state)
	if st == nil {
		st = newState(nil, own)
		ctx.Cache()[cacheKey] = st
	}
	// The cache keeps what was read; the client belongs to this call's Context.
	st.svc = network(ctx)
	if unchanged(ctx, st) {
		return experimental.Recorded(), nil
	}
	id, _ := req.Status["id"].(string)
	// A converged CR is decided from its spec's text and the group's view (quick.go); anything
	// else takes the full path.
	var q quickSpec
	if res := st.quickReconcile(req.Spec, id, &q); res != nil {
		return res, nil
	}
	return fullReconcile(st, req, id, logger(ctx, pdk.LevelWarn)), nil
}

// fullReconcile decodes and checks the CR's spec and runs the lifecycle driver on it.
func fullReconcile(st *state, req *pdk.ReconcileRequest, id string, log logf) *pdk.Result {
	var spec Spec
	if err := req.DecodeSpec(&spec); err != nil {
		return lifecycle.Outcome{Progress: lifecycle.Terminal(lifecycle.ReasonInvalidConfiguration,
			pdk.WithReason(invalidspec.Reason, err))}.Result()
	}
	c := &flavorCR{spec: spec, statusID: id, st: st, log: log}
	res := driver.Reconcile(context.Background(), c).Result()
	res.Notes = c.notes
	return res
}

// unchanged asks the host's convergence memo whether this CR can be reported as last time
// (docs/abi.md, "The convergence memo"). A flavor's verdict rests on its input (spec and status,
// which the host compares) and on the group's whole view of Neutron: which profile matches a spec
// entry, whether an owned one is preferred or bound elsewhere, depends on every flavor and profile.
// That view's digest is the evidence, computed once per group; any change in Neutron makes every
// CR of the group reconcile in full once. After a write of its own the group stops asking: its view
// is no longer what the lists returned.
func unchanged(ctx *pdk.Context, st *state) bool {
	if st.changed || st.load() != nil {
		return false
	}
	return experimental.Unchanged(ctx, st.digest())
}

// pruneCR reads PRUNE itself because one Prune handler serves both policies: the full prune with
// PRUNE=true and the profile sweep with PRUNE=false.
func pruneCR(ctx *pdk.Context, req *pdk.PruneRequest) error {
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
	// The group's reconciles are done: their view of every flavor and profile would otherwise
	// stay beside the prune's own lists of them.
	delete(ctx.Cache(), cacheKey)
	mode := sweepOnly
	if v, _ := ctx.Config("PRUNE"); v == "true" {
		mode = full
	}
	own, err := groupOwnership(ctx, req.Credentials)
	if err != nil {
		return err
	}
	return prune(network(ctx), own.Own, desired, req.AuthoritativeEmpty, mode, logger(ctx, pdk.LevelInfo))
}
