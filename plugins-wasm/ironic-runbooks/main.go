// Command ironic-runbooks is the openstack-sync plugin that converges IronicRunbook CRs into Ironic
// runbooks (docs/plugins/ironic-runbooks.md).
package main

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/experimental"
	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/compat"
	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/invalidspec"
)

var metadata = pdk.Metadata{
	Name:        "ironic-runbooks",
	Noun:        "ironic runbook",
	EnvPrefix:   "IRONIC_RUNBOOK",
	BindingName: "ironic-runbooks",
	// Same CRs, settings and answers: same requests and results (no clock, no randomness), so
	// a converged run may be replayed without the module (docs/abi.md, "The run replay").
	Deterministic: true,
	Grants: []pdk.Grant{
		// The unversioned root document: microversion discovery.
		{Service: "baremetal", Methods: []string{"GET"}, Paths: []string{"/"}},
		{Service: "baremetal", Methods: []string{"GET", "POST"}, Paths: []string{runbooksPath}},
		{Service: "baremetal", Methods: []string{"GET", "PATCH", "DELETE"}, Paths: []string{runbooksPath + "/*"}},
		{Service: "baremetal", Methods: []string{"PUT"}, Paths: []string{runbooksPath + "/*/traits"}},
	},
	Cleanup: pdk.Cleanup{WhenPrune: pdk.CleanupFinalizedPrune, WhenNoPrune: pdk.CleanupNone},
	// The marker records the credential group (markers.go), so each group is pruned on its own and
	// one group's failure holds back no other group's deletions (docs/contract.md §7.1); the
	// original's marker records none, so under its profile every group spares every group's names.
	PruneScope: pdk.PruneScopeGroup,
	Profiles: map[string]pdk.ProfileMetadata{
		string(compat.Understack): {PruneScope: pdk.PruneScopeAll,
			Cleanup: pdk.Cleanup{WhenPrune: pdk.CleanupFinalizedPrune, WhenNoPrune: pdk.CleanupNone}},
	},
	// The prune spares runbooks by name: 5,000 site-sized specs whole (steps with arguments) were
	// 8 MB of prune input, which with the list of every runbook did not fit 32 MiB.
	PruneKeys: []string{"runbookName"},
}

func init() {
	// Runbooks are found by name, never through the CR's status: the host need not send it.
	experimental.SkipStatus(&metadata)
	pdk.Register(pdk.Plugin{Metadata: metadata, WaitForAPI: waitForAPI, Reconcile: reconcileCR, Prune: pruneCR, Remark: remarkCR})
}

func main() {}

// connect returns the Ironic client at the group's microversion. The PDK negotiates it once per
// group (the answer is kept in the group cache); a client belongs to the Context it came from.
func connect(ctx *pdk.Context) (api, error) {
	client := ctx.OpenStack("baremetal")
	ver, err := client.NegotiateMicroversion("v1", runbooksVersion, newestKnown)
	if err != nil {
		var me *pdk.MicroversionError
		if errors.As(err, &me) {
			return api{}, pdk.Permanent(pdk.WithReason("IronicTooOld", err))
		}
		return api{}, err
	}
	known, _ := ctx.Cache()[catalogKey].(*catalog)
	if known == nil {
		after, err := listAfter(ctx)
		if err != nil {
			return api{}, err
		}
		keep, err := catalogMiB(ctx)
		if err != nil {
			return api{}, err
		}
		known = &catalog{listAfter: after, keepBytes: keep << 20}
		ctx.Cache()[catalogKey] = known
	}
	own, err := ownershipFor(ctx)
	if err != nil {
		return api{}, err
	}
	return api{svc: client.Microversion(ver.String()), ver: ver, known: known, own: own}, nil
}

// listAfter reads <PREFIX>_LIST_AFTER: the GETs a group sends before it lists all runbooks.
func listAfter(ctx *pdk.Context) (int, error) {
	v, ok := ctx.Config("LIST_AFTER")
	if !ok || v == "" {
		return defaultListAfter, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < -1 {
		return 0, pdk.Permanent(fmt.Errorf("IRONIC_RUNBOOK_LIST_AFTER=%q: want a whole number >= 0, or -1 to never list", v))
	}
	return n, nil
}

// defaultCatalogMiB is the JSON of listed and written runbooks a credential group keeps, in MiB
// (<PREFIX>_CATALOG_MIB): 5,000 site-shaped runbooks, about 10 MB, and 5 MiB more for the
// sandbox's default 32 MiB to hold the pass's own work and the collector's headroom
// (docs/plugins/ironic-runbooks.md, "Memory").
const defaultCatalogMiB = 12

// catalogMiB reads <PREFIX>_CATALOG_MIB: how much runbook JSON a group keeps, in MiB.
func catalogMiB(ctx *pdk.Context) (int, error) {
	v, ok := ctx.Config("CATALOG_MIB")
	if !ok || v == "" {
		return defaultCatalogMiB, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > 4096 {
		return 0, pdk.Permanent(fmt.Errorf("IRONIC_RUNBOOK_CATALOG_MIB=%q: want a whole number of MiB from 0 to 4096", v))
	}
	return n, nil
}

// catalogKey holds the group's *catalog in the group cache.
const catalogKey = "ironic-runbooks/catalog"

// waitForAPI checks the microversion, then lists one runbook so a policy refusal surfaces before
// any CR is reconciled. Neither will change by waiting when it fails for a 401/403.
func waitForAPI(ctx *pdk.Context) error {
	a, err := connect(ctx)
	if err != nil {
		return err
	}
	err = a.svc.Get(runbooksPath, url.Values{"detail": {"true"}, "limit": {"1"}}, nil)
	if pdk.IsRefused(err) {
		return pdk.Permanent(fmt.Errorf("Ironic refused to list runbooks: %w", err))
	}
	return err
}

// reconcileCR converges one CR, naming under the understack profile only the reasons the
// original named (none: its failures were all ReconcileError).
func reconcileCR(ctx *pdk.Context, req *pdk.ReconcileRequest) (*pdk.Result, error) {
	p, err := compat.Of(ctx)
	if err != nil {
		return nil, err
	}
	return p.OriginalReasons(reconcileRunbook(ctx, req))
}

func reconcileRunbook(ctx *pdk.Context, req *pdk.ReconcileRequest) (*pdk.Result, error) {
	// A spec the quick check understands is valid as the full path checks it (quick.go); its
	// decode waits until the quick check has had its say.
	var q quickSpec
	quick := parseQuickSpec(req.Spec, &q)
	hit, asked, early := recordedEarly(ctx, req, &q, quick)
	if hit {
		return experimental.Recorded(), nil
	}
	var spec Spec
	name := string(q.name)
	if !quick {
		if err := decodeSpec(req, &spec); err != nil {
			return nil, err
		}
		name = spec.RunbookName
	}
	own, err := groupOwnership(ctx, req.Credentials)
	if err != nil {
		return nil, err
	}
	// A miss of the early check is not asked again: nothing it rests on has changed since.
	if !asked && unchanged(ctx, name) {
		return experimental.Recorded(), nil
	}
	// The early check's connection, when it made one: the same group, version and catalog.
	a := early
	if a.svc == nil {
		if a, err = connect(ctx); err != nil {
			return nil, err
		}
	}
	a.own = own
	if quick {
		notes, converged, err := a.quickReconcile(&q, name)
		if err != nil {
			return nil, invalidspec.WithReason(err)
		}
		if converged {
			return &pdk.Result{Notes: notes}, nil
		}
		if err := decodeSpec(req, &spec); err != nil {
			return nil, err
		}
	}
	notes, err := reconcile(a, spec)
	if err != nil {
		return nil, invalidspec.WithReason(err)
	}
	return &pdk.Result{Notes: notes}, nil
}

// decodeSpec decodes and checks the CR's spec. An invalid spec costs no request, as in the
// original: it is refused before the memo's check reads the runbook and before the group's
// microversion is discovered.
func decodeSpec(req *pdk.ReconcileRequest, spec *Spec) error {
	if err := req.DecodeSpec(spec); err != nil {
		return pdk.WithReason(invalidspec.Reason, err)
	}
	if err := spec.check(); err != nil {
		return invalidspec.WithReason(err)
	}
	return nil
}

// quickReconcile reads what Ironic holds for the runbook named name as the full path would
// (source) and reports whether the quick check finds it converged, with the notes the full path
// would give it. Otherwise the runbook it read by GET is left for the full path, which so sends no
// second request.
func (a api) quickReconcile(q *quickSpec, name string) (notes []string, converged bool, err error) {
	withTraits := a.traitsSupported()
	// Below traitsVersion the full path refuses any other name before it reads the runbook.
	if a.known == nil || (!withTraits && !isTraitName(name)) {
		return nil, false, nil
	}
	raw, wrote, got, err := a.source(name)
	if err != nil {
		return nil, false, err
	}
	if !wrote && raw != nil && quickConverged(q, raw, a.own.Own, withTraits) {
		if !withTraits {
			notes = versionNotes(nil, a.ver, q.traitList(), len(q.description) > 0)
		}
		return notes, true, nil
	}
	if got {
		a.known.fetched = &fetchedRunbook{name: name, raw: raw}
	}
	return nil, false, nil
}

// unchanged asks the host's convergence memo whether this CR can be reported as last time
// (docs/abi.md, "The convergence memo"). The verdict on a runbook rests on its spec (the host
// compares the input) and on what Ironic holds as the reconcile reads it (source), at the group's
// microversion: that JSON and the version are the evidence. A runbook this pass wrote, or one
// Ironic does not have, is reconciled in full. What it read by GET is left for the reconcile that
// follows a miss, so a miss costs no second request.
func unchanged(ctx *pdk.Context, name string) bool {
	a, err := connect(ctx)
	if err != nil {
		return false
	}
	// A listed runbook whose JSON the group's catalog did not keep is checked by its digest; a
	// miss reads it by GET for the reconcile.
	if sum := a.listedDigest(name); sum != nil {
		return experimental.Unchanged(ctx, sum, []byte(a.ver.String()))
	}
	raw, wrote, got, err := a.source(name)
	if err != nil || wrote {
		return false
	}
	if got {
		a.known.fetched = &fetchedRunbook{name: name, raw: raw}
	}
	return raw != nil && experimental.Unchanged(ctx, raw, []byte(a.ver.String()))
}

// recordedEarly asks the memo before the spec is decoded and checked, when the group's catalog
// holds the runbook's evidence and asking costs no request: decoding every step, argument and
// extra of a converged CR was most of what the guest did for a CR the memo then answered
// (docs/benchmarks.md, "Guest time per CR"). It is sound because the host answers only for a
// CR whose input is byte for byte one this module, with these settings, reconciled successfully
// without a write: that spec decoded, checked and named its group then, and would again. Only
// the name is decoded, to find the evidence; the evidence is what unchanged gives for the same
// runbook. Anything else (the group has not listed yet, the runbook is not listed or was written
// or read by GET this pass) takes the full path, so an invalid spec still costs no request.
// asked says the memo was asked (and missed when hit is false); a is the connection it made, for
// the reconcile after a miss.
func recordedEarly(ctx *pdk.Context, req *pdk.ReconcileRequest, q *quickSpec, quick bool) (hit, asked bool, a api) {
	known, _ := ctx.Cache()[catalogKey].(*catalog)
	if known == nil || known.listed == nil || known.fetched != nil {
		return false, false, api{}
	}
	// A spec the quick check read has its name at hand (the decode would find the same).
	name := string(q.name)
	if !quick {
		var named struct {
			RunbookName string `json:"runbookName"`
		}
		if experimental.DecodeJSON(req.Spec, &named) != nil {
			return false, false, api{}
		}
		name = named.RunbookName
	}
	if name == "" {
		return false, false, api{}
	}
	a, err := connect(ctx)
	if err != nil {
		return false, false, api{}
	}
	evidence := a.heldEvidence(name)
	if evidence == nil {
		return false, false, a
	}
	return experimental.Unchanged(ctx, evidence, []byte(a.ver.String())), true, a
}

func pruneCR(ctx *pdk.Context, req *pdk.PruneRequest) error {
	// Only the names: a prune may carry thousands of specs, and their steps and extra decoded
	// would not fit the guest's memory beside the list of every runbook (docs/benchmarks.md).
	var names []struct {
		RunbookName string `json:"runbookName"`
	}
	if err := req.DecodeSpecs(&names); err != nil {
		return err
	}
	desired := make([]Spec, len(names))
	for i, n := range names {
		desired[i].RunbookName = n.RunbookName
	}
	own, err := groupOwnership(ctx, req.Credentials)
	if err != nil {
		return err
	}
	// prune refuses this case too; checking it before connect spares the version document.
	if len(desired) == 0 && !req.AuthoritativeEmpty {
		ctx.Logf(pdk.LevelWarn, "skipping ironic runbook prune: no desired runbooks and the empty set is not authoritative")
		return nil
	}
	// The group's reconciles are done: their catalog (every runbook's JSON, ~2 KB each with steps
	// and arguments) would otherwise stay beside the prune's own list of every runbook, and at
	// 5,000 site-shaped runbooks the two did not fit 32 MiB (docs/scaling.md).
	delete(ctx.Cache(), catalogKey)
	a, err := connect(ctx)
	if err != nil {
		return err
	}
	a.own = own
	out, err := prune(a, desired, req.AuthoritativeEmpty)
	for _, name := range out.Deleted {
		ctx.Logf(pdk.LevelInfo, "deleted ironic runbook %s: no IronicRunbook claims it", name)
	}
	for _, name := range out.Unowned {
		ctx.Logf(pdk.LevelInfo, "keeping ironic runbook %s: no IronicRunbook claims it but it lacks the %s marker", name, a.own.Own.owner)
	}
	for _, name := range out.Ungrouped {
		ctx.Logf(pdk.LevelWarn, "keeping ironic runbook %s: no IronicRunbook of this group claims it, but its marker records no "+
			"credential group (written before markers did), so it may be another group's; the IronicRunbook naming it records its "+
			"group when it reconciles, and one no CR names is left for an operator to delete", name)
	}
	return err
}
