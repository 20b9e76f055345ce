// Command neutron-subnet-pools is the openstack-sync plugin that converges NeutronSubnetPool CRs
// into Neutron subnet pools whose CIDRs come from Nautobot IPAM
// (docs/plugins/neutron-subnet-pools.md). Nautobot is a source outside OpenStack: the plugin
// reads it through the host (docs/abi.md section 8) and never holds its token.
package main

import (
	"strings"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/experimental"
	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/compat"
	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/invalidspec"
)

const envPrefix = "NEUTRON_SUBNET_POOL"

var metadata = pdk.Metadata{
	Name:        "neutron-subnet-pools",
	Noun:        "subnet pool",
	EnvPrefix:   envPrefix,
	BindingName: "neutron-subnet-pools",
	// Same CRs, settings and answers: same requests and results (no clock, no randomness), so
	// a converged run may be replayed without the module (docs/abi.md, "The run replay").
	Deterministic: true,
	Grants: []pdk.Grant{
		{Service: "network", Methods: []string{"GET", "POST"}, Paths: []string{poolsPath}},
		{Service: "network", Methods: []string{"GET", "PUT", "DELETE"}, Paths: []string{poolsPath + "/*"}},
		{Service: "network", Methods: []string{"PUT"}, Paths: []string{poolsPath + "/*/tags"}},
		// Address scopes are found and created, never changed or deleted: a scope outlives any
		// one pool, and the grant keeps it so whatever the code does.
		{Service: "network", Methods: []string{"GET", "POST"}, Paths: []string{scopesPath}},
		{Service: "network", Methods: []string{"GET"}, Paths: []string{scopesPath + "/*"}},
	},
	Sources: []pdk.SourceGrant{
		{Name: "nautobot", Methods: []string{"GET"}, Paths: []string{strings.TrimSuffix(prefixesPath, "/")}},
	},
	// NONE without PRUNE, as the original: a pool may have subnets allocated under it, so it is
	// never swept without the finalizer; deleting a CR then leaves its pool for an operator.
	Cleanup: pdk.Cleanup{WhenPrune: pdk.CleanupFinalizedPrune, WhenNoPrune: pdk.CleanupNone},
	// The tags record the credential group (markers.go), so each group is pruned on its own and
	// one group's failure holds back no other group's deletions (docs/contract.md §7.1); the
	// original's tag records none, so under its profile every group spares every group's names.
	PruneScope: pdk.PruneScopeGroup,
	Profiles: map[string]pdk.ProfileMetadata{
		string(compat.Understack): {PruneScope: pdk.PruneScopeAll,
			Cleanup: pdk.Cleanup{WhenPrune: pdk.CleanupFinalizedPrune, WhenNoPrune: pdk.CleanupNone}},
	},
	Description: "Neutron subnet pools from NeutronSubnetPool CRs, their CIDRs from Nautobot IPAM",
	Source:      "https://github.com/openstack-sync/openstack-sync",
}

func init() {
	// Pools are found by name and marker, never through the CR's status: the host need not send it.
	experimental.SkipStatus(&metadata)
	pdk.Register(pdk.Plugin{Metadata: metadata, WaitForAPI: waitForAPI, Reconcile: reconcileCR, Prune: pruneCR, Remark: remarkCR})
}

func main() {}

// waitForAPI lists one pool, so a policy refusal surfaces before any CR is reconciled. Nautobot is
// not probed: each CR names its own, and its failure is that CR's.
func waitForAPI(ctx *pdk.Context) error {
	err := ctx.OpenStack("network").Get(poolsPath, map[string][]string{"limit": {"1"}}, nil)
	if pdk.IsRefused(err) {
		return pdk.Permanent(err)
	}
	return err
}

// reconcileCR converges one CR. Under the understack profile its failures name only the reason
// the original named (NautobotPrefixMissing; its other failures were all ReconcileError).
func reconcileCR(ctx *pdk.Context, req *pdk.ReconcileRequest) (*pdk.Result, error) {
	own, err := ownershipFor(ctx)
	if err != nil {
		return nil, err
	}
	if own, err = own.inGroup(req.Credentials); err != nil {
		return nil, err
	}
	res, err := reconcileSpec(ctx, req, own)
	return own.profile.OriginalReasons(res, err, prefixMissingReason)
}

func reconcileSpec(ctx *pdk.Context, req *pdk.ReconcileRequest, own ownership) (*pdk.Result, error) {
	var spec Spec
	if err := req.DecodeSpec(&spec); err != nil {
		return nil, pdk.WithReason(invalidspec.Reason, err)
	}
	site, _ := ctx.Config("SITE")
	res, err := reconcile(ctx, &spec, own, strings.TrimSpace(site))
	if err != nil {
		return nil, invalidspec.WithReason(err)
	}
	return res, nil
}

func pruneCR(ctx *pdk.Context, req *pdk.PruneRequest) error {
	own, err := ownershipFor(ctx)
	if err != nil {
		return err
	}
	if own, err = own.inGroup(req.Credentials); err != nil {
		return err
	}
	// Only the names: the pool's name is on the CR, so prune needs nothing from Nautobot.
	var specs []struct {
		Name string `json:"name"`
	}
	if err := req.DecodeSpecs(&specs); err != nil {
		return err
	}
	var names []string
	for _, s := range specs {
		if name := strings.TrimSpace(s.Name); name != "" {
			names = append(names, name)
		} else {
			ctx.Log(pdk.LevelWarn, "skipping a subnet pool spec with no name for prune")
		}
	}
	if len(names) == 0 && !req.AuthoritativeEmpty {
		ctx.Log(pdk.LevelWarn, "no desired subnet pools found; skipping prune to avoid deleting all managed subnet pools")
		return nil
	}
	out, err := prune(ctx.OpenStack("network"), names, req.AuthoritativeEmpty, own)
	for _, name := range out.Deleted {
		ctx.Logf(pdk.LevelInfo, "deleted subnet pool %s: no NeutronSubnetPool claims it", name)
	}
	for _, name := range out.Ungrouped {
		ctx.Logf(pdk.LevelWarn, "keeping subnet pool %s: no NeutronSubnetPool of this group claims it, but its tags record no "+
			"credential group (tagged before they did), so it may be another group's; the NeutronSubnetPool naming it records "+
			"its group when it reconciles, and one no CR names is left for an operator to delete", name)
	}
	return err
}
