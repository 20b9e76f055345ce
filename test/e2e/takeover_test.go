//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The original operator's identifiers, as its rackerlabs/understack sources write them; the test
// builds the state it leaves from these facts, independently of the host's code.
const (
	understackFinalizer = "openstack-sync.understack.rackspace.net/finalizer"
	understackFlavor    = "[understack-router-flavor-operator]"
	understackRangePfx  = "understack-sr:"
	understackPoolTag   = "understack-operator-neutron-subnet-pool"
	tkoNS               = "takeover"
	// tkoScope is the address scope the taken-over pool lives in, made by the test as the
	// original would have (the plugin never deletes a scope).
	tkoScope = "e2e-tko-pool-scope"
)

// The takeover's subnet pools: one converged under a CR, one whose CR is Terminating, an orphan
// carrying the original's tag and a hand-made one without it.
var tkoPools = []string{"TKO-POOL-KEEP", "TKO-POOL-TERM", "TKO-POOL-ORPHAN", "TKO-POOL-HAND"}

var (
	understackRunbookExtra = map[string]any{"_understack_runbook_operator": "managed",
		"_understack_runbook_marker_version": "v1", "_understack_runbook_source": "IronicRunbook"}
	understackProfileMeta = map[string]any{"_understack_router_flavor_operator": "managed",
		"_understack_router_flavor_marker_version": "v1", "_understack_router_flavor_source": "NeutronRouterFlavor"}
	uRunbooks = schema.GroupVersionResource{Group: "ironic.understack.rackspace.net", Version: "v1alpha1", Resource: "ironicrunbooks"}
	uFlavors  = schema.GroupVersionResource{Group: "neutron.understack.rackspace.net", Version: "v1alpha1", Resource: "neutronrouterflavors"}
	uRanges   = schema.GroupVersionResource{Group: "neutron.understack.rackspace.net", Version: "v1alpha1", Resource: "neutronsegmentranges"}
	uPools    = schema.GroupVersionResource{Group: "neutron.understack.rackspace.net", Version: "v1alpha1", Resource: "neutronsubnetpools"}
)

// TestTakeover: the state the original operator leaves (its CRDs, CRs with its finalizer, one of
// them Terminating; OpenStack resources with its markers, an orphan among them; hand-made
// resources without a marker), then this chart installed under compatibility.profile: understack;
// then the way back (the state the original expects); then openstack-sync migrate (a dry run, a run
// refused for want of permission, a run killed halfway, a run that finishes) and this chart under
// this project's profile (docs/migrating.md).
func TestTakeover(t *testing.T) {
	h := need(t)
	require.NotNil(t, h.nautobot, "the subnet pools read the tier's Nautobot")
	ctx := context.Background()
	// The suite's own operator prunes with this project's markers: migrated resources would be
	// no CR's of its namespace.
	h.stopOperator()
	c := h.cloud
	t.Cleanup(func() {
		for _, n := range []string{"CUSTOM_TKO_KEEP", "CUSTOM_TKO_KEEP2", "CUSTOM_TKO_TERM", "CUSTOM_TKO_ORPHAN", "CUSTOM_TKO_HAND"} {
			_ = c.deleteRunbook(ctx, n)
		}
		for _, n := range []string{understackRangePfx + "tko-keep", "tko-keep", understackRangePfx + "tko-orphan", "tko-hand"} {
			_ = c.deleteSegmentRange(ctx, n)
		}
		// Its profile carries one profile's marker or the other's: it is the test's either way.
		_ = c.deleteFlavorAnd(ctx, "tko-flavor", func(map[string]any) bool { return true })
		for _, n := range tkoPools {
			_ = c.deletePool(ctx, n)
		}
		_ = c.deleteScope(ctx, tkoScope)
	})

	// The release, installed before anything runs (the pods are started below).
	values := tkoValues(t, h, "understack", map[string]bool{"ironicRunbooks": true, "neutronRouterFlavors": true, "neutronSegmentRanges": false,
		"neutronSubnetPools": true})
	r := h.installReleaseValues(t, ctx, "tko", tkoNS, values)
	secret := h.examples.secret.GetName()

	// What the original leaves in OpenStack.
	steps := []any{map[string]any{"interface": "deploy", "step": "erase_devices_metadata", "order": 5, "args": map[string]any{}}}
	for _, n := range []string{"CUSTOM_TKO_KEEP", "CUSTOM_TKO_KEEP2", "CUSTOM_TKO_TERM", "CUSTOM_TKO_ORPHAN"} {
		extra := withKeys(map[string]any{"team": "metal"}, understackRunbookExtra)
		require.NoError(t, c.createRunbook(ctx, n, steps, extra))
	}
	require.NoError(t, c.createRunbook(ctx, "CUSTOM_TKO_HAND", steps, map[string]any{"ticket": "OPS-1"}))
	vlan := func(name string, min int) map[string]any {
		return map[string]any{"name": name, "network_type": "vlan", "physical_network": "physnet1", "minimum": min, "maximum": min + 9, "shared": true}
	}
	for _, rg := range []map[string]any{vlan(understackRangePfx+"tko-keep", 3700), vlan(understackRangePfx+"tko-orphan", 3710), vlan("tko-hand", 3720)} {
		require.NoError(t, c.post(ctx, "network_segment_ranges", "network_segment_range", rg))
	}
	const driver = "neutron.services.l3_router.service_providers.single_node.SingleNodeDriver"
	profileID, err := c.createTakeoverFlavor(ctx, "tko-flavor", "takeover routers "+understackFlavor, driver,
		withKeys(map[string]any{"resource_class": "tko"}, understackProfileMeta))
	require.NoError(t, err)
	// Its subnet pools: the CIDRs of the converged one are the Nautobot prefix its CR names, its
	// bounds and description the CR's, its tags the CR's plus the original's ownership tag.
	scopeID, err := c.create(ctx, "address-scopes", "address_scope", map[string]any{"name": tkoScope, "ip_version": 4})
	require.NoError(t, err)
	for i, n := range tkoPools {
		body := map[string]any{"name": n, "prefixes": []string{fmt.Sprintf("10.251.%d.0/24", 210+i)}, "min_prefixlen": 26,
			"default_prefixlen": 28, "max_prefixlen": 30, "description": "takeover pool", "shared": false}
		if n == "TKO-POOL-KEEP" {
			body["address_scope_id"] = scopeID
		}
		id, err := c.create(ctx, "subnetpools", "subnetpool", body)
		require.NoError(t, err)
		if n != "TKO-POOL-HAND" {
			require.NoError(t, c.tagPool(ctx, id, "tko", understackPoolTag))
		}
	}
	tokenSecret := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "tko-nautobot", "namespace": tkoNS}, "stringData": map[string]any{"token": h.nautobot.token}}}
	_, err = h.dyn.Resource(secretsGVR).Namespace(tkoNS).Create(ctx, tokenSecret, metav1.CreateOptions{})
	require.NoError(t, err)

	// What the original leaves in Kubernetes: its CRs, the converged ones with its finalizer, one
	// deleted just before the switch (Terminating), the segment range without one (PRUNE=false).
	creds := func(cloud string) map[string]any { return map[string]any{"secretName": secret, "cloudName": cloud} }
	runbookCR := func(name, rb string) map[string]any {
		return map[string]any{"runbookName": rb, "public": true, "traits": []any{rb}, "steps": steps,
			"extra": map[string]any{"team": "metal"}, "cloudCredentialsRef": creds("local-system")}
	}
	h.createIn(t, ctx, uRunbooks, "IronicRunbook", "tko-keep", runbookCR("tko-keep", "CUSTOM_TKO_KEEP"), understackFinalizer)
	h.createIn(t, ctx, uRunbooks, "IronicRunbook", "tko-keep2", runbookCR("tko-keep2", "CUSTOM_TKO_KEEP2"), understackFinalizer)
	h.createIn(t, ctx, uRunbooks, "IronicRunbook", "tko-term", runbookCR("tko-term", "CUSTOM_TKO_TERM"), understackFinalizer)
	require.NoError(t, h.dyn.Resource(uRunbooks).Namespace(tkoNS).Delete(ctx, "tko-term", metav1.DeleteOptions{}))
	h.createIn(t, ctx, uRanges, "NeutronSegmentRange", "tko-keep", map[string]any{"name": "tko-keep", "network_type": "vlan",
		"physical_network": "physnet1", "minimum": 3700, "maximum": 3709, "cloudCredentialsRef": creds("local-admin")})
	h.createIn(t, ctx, uFlavors, "NeutronRouterFlavor", "tko-flavor", map[string]any{"name": "tko-flavor", "description": "takeover routers",
		"service_profiles":    []any{map[string]any{"driver": driver, "meta_info": map[string]any{"resource_class": "tko"}}},
		"cloudCredentialsRef": creds("local-admin")}, understackFinalizer)
	poolCR := func(pool string) map[string]any {
		return map[string]any{"name": pool, "address_scope": map[string]any{"name": tkoScope}, "minimum_prefix_length": 26,
			"default_prefix_length": 28, "maximum_prefix_length": 30, "shared": false, "description": "takeover pool", "tags": []any{"tko"},
			"nautobot": map[string]any{"url": h.nautobot.url, "tokenSecretRef": map[string]any{"secretName": "tko-nautobot", "key": "token"},
				"prefix_refs": []any{map[string]any{"id": tkoPrefixID}}},
			"cloudCredentialsRef": creds("local-admin")}
	}
	h.createIn(t, ctx, uPools, "NeutronSubnetPool", "tko-pool-keep", poolCR("TKO-POOL-KEEP"), understackFinalizer)
	h.createIn(t, ctx, uPools, "NeutronSubnetPool", "tko-pool-term", poolCR("TKO-POOL-TERM"), understackFinalizer)
	require.NoError(t, h.dyn.Resource(uPools).Namespace(tkoNS).Delete(ctx, "tko-pool-term", metav1.DeleteOptions{}))
	before := c.snapshot(t, ctx)

	// The takeover: one pod of the chart under the understack profile.
	pod := r.start(t, ctx, "tko-1")
	for _, cr := range []struct {
		gvr  schema.GroupVersionResource
		name string
	}{{uRunbooks, "tko-keep"}, {uRunbooks, "tko-keep2"}, {uRanges, "tko-keep"}, {uFlavors, "tko-flavor"}, {uPools, "tko-pool-keep"}} {
		h.waitOriginalSynced(t, ctx, cr.gvr, cr.name)
	}
	h.waitFor(t, syncWait, "the Terminating CRs released and the orphans pruned", func() (bool, string) {
		term, _ := h.dyn.Resource(uRunbooks).Namespace(tkoNS).Get(ctx, "tko-term", metav1.GetOptions{})
		orphan, _ := c.runbook(ctx, "CUSTOM_TKO_ORPHAN")
		poolTerm, _ := h.dyn.Resource(uPools).Namespace(tkoNS).Get(ctx, "tko-pool-term", metav1.GetOptions{})
		poolOrphan, _ := c.subnetPool(ctx, "TKO-POOL-ORPHAN")
		return term == nil && orphan == nil && poolTerm == nil && poolOrphan == nil,
			fmt.Sprintf("tko-term %v, orphan %v, tko-pool-term %v, pool orphan %v", term != nil, orphan != nil, poolTerm != nil, poolOrphan != nil)
	})
	after := c.snapshot(t, ctx)
	// Zero creates and zero writes for what existed; the Terminating CR's runbook deleted; the
	// orphan pruned where PRUNE=true (runbooks), kept where PRUNE=false (segment ranges).
	for _, n := range []string{"rb/CUSTOM_TKO_KEEP", "rb/CUSTOM_TKO_KEEP2", "rb/CUSTOM_TKO_HAND", "sr/understack-sr:tko-keep",
		"sr/understack-sr:tko-orphan", "sr/tko-hand", "fl/tko-flavor", "sp/" + profileID, "pool/TKO-POOL-KEEP", "pool/TKO-POOL-HAND"} {
		assert.Equal(t, before[n], after[n], "%s: unchanged by the takeover", n)
	}
	assert.NotContains(t, after, "rb/CUSTOM_TKO_TERM", "the Terminating CR's runbook is deleted")
	assert.NotContains(t, after, "rb/CUSTOM_TKO_ORPHAN", "the orphan is pruned with PRUNE=true")
	assert.NotContains(t, after, "pool/TKO-POOL-TERM", "the Terminating CR's pool is deleted")
	assert.NotContains(t, after, "pool/TKO-POOL-ORPHAN", "the pool carrying the original's tag that no CR names is pruned")
	pod.kill()

	// The way back: the original finds exactly what it wrote. Its finalizer (never this
	// project's) on its CRs, its markers unchanged, and its status shape.
	for _, cr := range []struct {
		gvr        schema.GroupVersionResource
		name       string
		finalizers []any
	}{{uRunbooks, "tko-keep", []any{understackFinalizer}}, {uFlavors, "tko-flavor", []any{understackFinalizer}}, {uRanges, "tko-keep", nil},
		{uPools, "tko-pool-keep", []any{understackFinalizer}}} {
		u, err := h.dyn.Resource(cr.gvr).Namespace(tkoNS).Get(ctx, cr.name, metav1.GetOptions{})
		require.NoError(t, err)
		fs, _, _ := unstructured.NestedSlice(u.Object, "metadata", "finalizers")
		assert.Equal(t, cr.finalizers, fs, "%s %s", cr.gvr.Resource, cr.name)
		st, _, _ := unstructured.NestedMap(u.Object, "status")
		assert.ElementsMatch(t, []string{"syncStatus", "lastSyncTime", "message", "observedGeneration", "conditions"}, keysOf(st),
			"%s %s: the original's status fields", cr.gvr.Resource, cr.name)
	}
	rb, err := c.runbook(ctx, "CUSTOM_TKO_KEEP")
	require.NoError(t, err)
	assert.Equal(t, withKeys(map[string]any{"team": "metal"}, understackRunbookExtra), rb["extra"])
	assert.Equal(t, `["tko","`+understackPoolTag+`"]`, after["pool/TKO-POOL-KEEP"][2], "the pool keeps the original's tag and the CR's")

	// openstack-sync migrate, runbooks first: a dry run changes nothing.
	const fromRB, toRB = "ironicrunbooks.ironic.understack.rackspace.net/v1alpha1", "ironicrunbooks.ironic.openstack-sync.io/v1alpha1"
	out, code := h.migrate(t, ctx, h.env.Kubeconfig, "ironic-runbooks", fromRB, toRB, "--dry-run")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "create ironicrunbooks.ironic.openstack-sync.io takeover/tko-keep with finalizer openstack-sync.io/finalizer")
	assert.Contains(t, out, "re-mark ironic runbook CUSTOM_TKO_KEEP (")
	assert.Contains(t, out, "remove finalizer "+understackFinalizer+" from ironicrunbooks.ironic.understack.rackspace.net takeover/tko-keep, then delete it")
	assert.Equal(t, after, c.snapshot(t, ctx), "a dry run writes nothing")
	for _, n := range []string{"tko-keep", "tko-keep2"} {
		u := h.getNS(t, ctx, uRunbooks, n)
		fs, _, _ := unstructured.NestedSlice(u.Object, "metadata", "finalizers")
		assert.Equal(t, []any{understackFinalizer}, fs, "a dry run writes nothing: %s", n)
		assert.Nil(t, u.GetDeletionTimestamp(), "a dry run deletes nothing: %s", n)
		_, err := h.dyn.Resource(runbooks.gvr).Namespace(tkoNS).Get(ctx, n, metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "a dry run creates nothing: %s", n)
	}

	// Without permission to patch the original's CRs: one line naming the CR and what to do.
	out, code = h.migrate(t, ctx, h.noPatchKubeconfig(t, ctx), "ironic-runbooks", fromRB, toRB)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "stopped: not allowed to patch ironicrunbooks.ironic.understack.rackspace.net takeover/tko-keep (HTTP 403 Forbidden")
	assert.Contains(t, out, "run migrate with credentials that may list, get, create, patch and delete")
	h.ownedUnderOneName(t, ctx, "tko-keep", "CUSTOM_TKO_KEEP")

	// Killed halfway (one OpenStack request every 2 s keeps the second CR's move slow enough to
	// land in): everything stays owned under one of the names; the next run finishes.
	out = h.migrateKilled(t, ctx, fromRB, toRB, "IronicRunbook takeover/tko-keep2")
	for _, n := range [][2]string{{"tko-keep", "CUSTOM_TKO_KEEP"}, {"tko-keep2", "CUSTOM_TKO_KEEP2"}} {
		h.ownedUnderOneName(t, ctx, n[0], n[1])
	}
	_, err = h.dyn.Resource(uRunbooks).Namespace(tkoNS).Get(ctx, "tko-keep2", metav1.GetOptions{})
	require.NoError(t, err, "killed before the second CR was retired:\n%s", out)
	out, code = h.migrate(t, ctx, h.env.Kubeconfig, "ironic-runbooks", fromRB, toRB)
	require.Equal(t, 0, code, out)
	out, code = h.migrate(t, ctx, h.env.Kubeconfig, "neutron-router-flavors",
		"neutronrouterflavors.neutron.understack.rackspace.net/v1alpha1", "neutronrouterflavors.neutron.openstack-sync.io/v1alpha1")
	require.Equal(t, 0, code, out)
	out, code = h.migrate(t, ctx, h.env.Kubeconfig, "neutron-segment-ranges",
		"neutronsegmentranges.neutron.understack.rackspace.net/v1alpha1", "neutronsegmentranges.neutron.openstack-sync.io/v1alpha1")
	require.Equal(t, 0, code, out)
	out, code = h.migrate(t, ctx, h.env.Kubeconfig, "neutron-subnet-pools",
		"neutronsubnetpools.neutron.understack.rackspace.net/v1alpha1", "neutronsubnetpools.neutron.openstack-sync.io/v1alpha1")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "re-mark subnet pool TKO-POOL-KEEP (")
	out, code = h.migrate(t, ctx, h.env.Kubeconfig, "ironic-runbooks", fromRB, toRB)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "0 moved, 0 moved already, 0 refused", "a finished move: nothing left, nothing written")
	for _, g := range []schema.GroupVersionResource{uRunbooks, uFlavors, uRanges, uPools} {
		l, err := h.dyn.Resource(g).Namespace(tkoNS).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		assert.Empty(t, l.Items, "%s: every CR moved", g.Resource)
	}
	moved := c.snapshot(t, ctx)
	for _, cr := range []struct {
		k    kind
		name string
		fin  []any
	}{{runbooks, "tko-keep", []any{finalizer}}, {runbooks, "tko-keep2", []any{finalizer}}, {routerFlavors, "tko-flavor", []any{finalizer}},
		{segmentRanges, "tko-keep", nil}, {subnetPools, "tko-pool-keep", []any{finalizer}}} {
		fs, _, _ := unstructured.NestedSlice(h.getNS(t, ctx, cr.k.gvr, cr.name).Object, "metadata", "finalizers")
		assert.Equal(t, cr.fin, fs, "%s %s: this project's finalizer where the original held its own", cr.k.kind, cr.name)
	}

	// This project's profile (PRUNE off: its prune would sweep every test's resources): every CR
	// Synced under its own CRD, with zero creates and no write but the credential group the
	// runbooks and the pool gain.
	// Router flavors stay off: with PRUNE=false the plugin still sweeps owned profiles bound to no
	// flavor, which may be another test's.
	values = tkoValues(t, h, "openstack-sync", map[string]bool{"ironicRunbooks": false, "neutronSegmentRanges": false, "neutronSubnetPools": false})
	path := filepath.Join(h.env.WorkDir, "tko-openstack-sync-values.yaml")
	require.NoError(t, os.WriteFile(path, []byte("env: {LOG_LEVEL: debug}\n"+values), 0o644))
	hout, err := h.helm("upgrade", "tko", chartDir, "--namespace", tkoNS, "--values", path)
	require.NoError(t, err, hout)
	r.start(t, ctx, "tko-2")
	for _, cr := range []struct {
		k    kind
		name string
	}{{runbooks, "tko-keep"}, {runbooks, "tko-keep2"}, {segmentRanges, "tko-keep"}, {subnetPools, "tko-pool-keep"}} {
		h.waitSyncedNS(t, ctx, cr.k.gvr, cr.name)
	}
	final := c.snapshot(t, ctx)
	assert.Equal(t, "takeover routers "+flavorMarker, final["fl/tko-flavor"][1], "the flavor carries this project's marker")
	assert.Contains(t, final["sp/"+profileID][1], markerKey, "and so does its profile, still bound")
	assert.Contains(t, final["fl/tko-flavor"][2], profileID)
	assert.Equal(t, `["`+poolTag+`","tko"]`, moved["pool/TKO-POOL-KEEP"][2], "migrate moved the pool to this project's tag")
	assert.Equal(t, before["pool/TKO-POOL-KEEP"][0], moved["pool/TKO-POOL-KEEP"][0], "the same pool")
	for _, n := range []string{"sr/tko-keep", "fl/tko-flavor", "sp/" + profileID} {
		assert.Equal(t, moved[n], final[n], "%s: unchanged under this project's profile", n)
	}
	// migrate writes this project's marker without a credential group: each runbook's first
	// reconcile adds its CR's (docs/migrating.md, "Credential groups in the markers"), its only write.
	for _, n := range []string{"rb/CUSTOM_TKO_KEEP", "rb/CUSTOM_TKO_KEEP2"} {
		require.Len(t, final[n], 3, n)
		assert.Equal(t, moved[n][0], final[n][0], "%s: the same runbook", n)
		var was, now map[string]any
		require.NoError(t, json.Unmarshal([]byte(moved[n][2]), &was))
		require.NoError(t, json.Unmarshal([]byte(final[n][2]), &now))
		was[groupKey] = tkoNS + "/" + secret + "/local-system"
		assert.Equal(t, was, now, "%s: its extra gained its credential group, and nothing else changed", n)
	}
	// The pool likewise gains its credential group's tag on its first reconcile, and nothing else.
	require.Len(t, final["pool/TKO-POOL-KEEP"], 3)
	assert.Equal(t, moved["pool/TKO-POOL-KEEP"][0], final["pool/TKO-POOL-KEEP"][0], "the same pool")
	var movedTags, finalTags []string
	require.NoError(t, json.Unmarshal([]byte(moved["pool/TKO-POOL-KEEP"][2]), &movedTags))
	require.NoError(t, json.Unmarshal([]byte(final["pool/TKO-POOL-KEEP"][2]), &finalTags))
	var groupTags []string
	for _, tag := range finalTags {
		if strings.HasPrefix(tag, "openstack-sync.io/credential-group=") {
			groupTags = append(groupTags, tag)
		}
	}
	require.Len(t, groupTags, 1, "the pool's tags record its credential group once: %v", finalTags)
	assert.ElementsMatch(t, append(movedTags, groupTags[0]), finalTags, "the pool's tags gained the group and nothing else")
	assert.Equal(t, before["sr/understack-sr:tko-keep"][:1], final["sr/tko-keep"][:1], "the range is the one the original made (same id)")
}

// tkoValues are the release's values: the plugins of this run, the profile, PRUNE per plugin.
func tkoValues(t *testing.T, h *harness, profile string, prune map[string]bool) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "hostBinary: %s\ncompatibility: {profile: %s}\nplugins:\n", h.env.HostBinary, profile)
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range prune {
			if !yield(k) {
				return
			}
		}
	})
	for _, k := range keys {
		fmt.Fprintf(&b, "  %s: true\n", k)
	}
	b.WriteString("pluginData:\n")
	for _, k := range keys {
		file := filepath.Join(h.env.PluginsDir, kebab(k)+".wasm")
		body, err := os.ReadFile(file)
		require.NoError(t, err)
		sum := sha256.Sum256(body)
		site := ""
		if k == "neutronSubnetPools" {
			// The operator allow-lists the tier's Nautobot; the original read UNDERSTACK_SITE.
			site = ", SITE: " + h.nautobot.site
		}
		fmt.Fprintf(&b, "  %s:\n    plugin: {file: %s, sha256: %q}\n    hook: {env: {PRUNE: %v, READY_RETRIES: 3, READY_DELAY: 1%s}}\n",
			k, file, hex.EncodeToString(sum[:]), prune[k], site)
		if k == "neutronSubnetPools" {
			b.WriteString(h.nautobot.values())
		}
	}
	return b.String()
}

func kebab(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 'A' && r <= 'Z' {
			b.WriteByte('-')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

func withKeys(m map[string]any, more map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	for k, v := range more {
		out[k] = v
	}
	return out
}

func keysOf(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func (h *harness) createIn(t *testing.T, ctx context.Context, gvr schema.GroupVersionResource, kind, name string, spec map[string]any, finalizers ...string) {
	t.Helper()
	md := map[string]any{"name": name, "namespace": tkoNS}
	if len(finalizers) > 0 {
		md["finalizers"] = finalizers
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": gvr.Group + "/" + gvr.Version, "kind": kind, "metadata": md, "spec": spec}}
	_, err := h.dyn.Resource(gvr).Namespace(tkoNS).Create(ctx, u, metav1.CreateOptions{})
	require.NoError(t, err, "create %s %s", kind, name)
}

func (h *harness) getNS(t *testing.T, ctx context.Context, gvr schema.GroupVersionResource, name string) *unstructured.Unstructured {
	t.Helper()
	u, err := h.dyn.Resource(gvr).Namespace(tkoNS).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	return u
}

// waitOriginalSynced waits for the original's status: Synced for the current generation, one
// Ready condition, reason Reconciled.
func (h *harness) waitOriginalSynced(t *testing.T, ctx context.Context, gvr schema.GroupVersionResource, name string) {
	t.Helper()
	h.waitFor(t, syncWait, gvr.Resource+" "+name+" Synced", func() (bool, string) {
		u := h.getNS(t, ctx, gvr, name)
		st := readStatus(u)
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		ok := st.syncStatus == "Synced" && st.observed == u.GetGeneration() && len(conds) == 1 && st.ready["reason"] == "Reconciled"
		return ok, fmt.Sprint(u.Object["status"])
	})
}

func (h *harness) waitSyncedNS(t *testing.T, ctx context.Context, gvr schema.GroupVersionResource, name string) {
	t.Helper()
	h.waitFor(t, syncWait, gvr.Resource+" "+name+" Synced", func() (bool, string) {
		u, err := h.dyn.Resource(gvr).Namespace(tkoNS).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		st := readStatus(u)
		return st.syncStatus == "Synced" && st.observed == u.GetGeneration(), fmt.Sprint(u.Object["status"])
	})
}

// ownedUnderOneName checks a CR is under one of the two CRDs and its runbook carries one of the
// two profiles' markers.
func (h *harness) ownedUnderOneName(t *testing.T, ctx context.Context, cr, runbook string) {
	t.Helper()
	_, errOld := h.dyn.Resource(uRunbooks).Namespace(tkoNS).Get(ctx, cr, metav1.GetOptions{})
	_, errNew := h.dyn.Resource(runbooks.gvr).Namespace(tkoNS).Get(ctx, cr, metav1.GetOptions{})
	assert.True(t, errOld == nil || errNew == nil, "CR %s is under neither CRD", cr)
	rb, err := h.cloud.runbook(ctx, runbook)
	require.NoError(t, err)
	require.NotNil(t, rb, "runbook %s", runbook)
	extra, _ := rb["extra"].(map[string]any)
	assert.True(t, extra["_understack_runbook_operator"] == "managed" || extra[markerKey] == runbookMarkerValue,
		"runbook %s carries no marker: %v", runbook, extra)
}

// migrate runs openstack-sync migrate with the plugin of this run and the given kubeconfig.
func (h *harness) migrate(t *testing.T, ctx context.Context, kubeconfig, plugin, from, to string, extra ...string) (string, int) {
	t.Helper()
	cmd := h.migrateCmd(ctx, kubeconfig, plugin, from, to, extra...)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	}
	require.NoError(t, err)
	return string(out), 0
}

func (h *harness) migrateCmd(ctx context.Context, kubeconfig, plugin, from, to string, extra ...string) *exec.Cmd {
	args := append([]string{"migrate", "--plugin", filepath.Join(h.env.PluginsDir, plugin+".wasm"), "--from-crd", from, "--to-crd", to,
		"--namespace", tkoNS}, extra...)
	cmd := exec.CommandContext(ctx, h.env.HostBinary, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "OPENSTACK_SYNC_CACHE_DIR="+filepath.Join(h.env.WorkDir, "wasm-cache"))
	return cmd
}

// migrateKilled starts a migrate whose OpenStack requests wait 2 s each and kills it (SIGKILL) as
// soon as it prints the line starting with at.
func (h *harness) migrateKilled(t *testing.T, ctx context.Context, from, to, at string) string {
	t.Helper()
	cmd := h.migrateCmd(ctx, h.env.Kubeconfig, "ironic-runbooks", from, to)
	cmd.Env = append(cmd.Env, "IRONIC_RUNBOOK_REQUEST_RATE=0.5")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var seen []string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		seen = append(seen, sc.Text())
		if strings.HasPrefix(sc.Text(), at) {
			require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
			break
		}
	}
	err = cmd.Wait()
	require.Error(t, err, "migrate finished before it could be killed:\n%s", strings.Join(seen, "\n"))
	return strings.Join(seen, "\n")
}

// noPatchKubeconfig is a kubeconfig of a service account that may read both CRDs and create under
// this project's, but not patch the original's CRs.
func (h *harness) noPatchKubeconfig(t *testing.T, ctx context.Context) string {
	t.Helper()
	const sa = "tko-no-patch"
	_, err := h.kube.CoreV1().ServiceAccounts(tkoNS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: sa}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}},
		{APIGroups: []string{uRunbooks.Group}, Resources: []string{"ironicrunbooks"}, Verbs: []string{"get", "list", "delete"}},
		{APIGroups: []string{runbooks.gvr.Group}, Resources: []string{"ironicrunbooks"}, Verbs: []string{"get", "list", "create", "patch", "delete"}},
	}}
	_, err = h.kube.RbacV1().Roles(tkoNS).Create(ctx, role, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = h.kube.RbacV1().RoleBindings(tkoNS).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: sa},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: sa},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: tkoNS}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	expiry := int64(3600)
	tok, err := h.kube.CoreV1().ServiceAccounts(tkoNS).CreateToken(ctx, sa,
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	require.NoError(t, err)
	path := filepath.Join(h.env.WorkDir, sa+"-kubeconfig")
	require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: test, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: sa, user: {token: %q}}]
contexts: [{name: test, context: {cluster: test, user: sa, namespace: %s}}]
current-context: test
`, h.restConfig.Host, tok.Status.Token, tkoNS)), 0o600))
	return path
}

// createRunbook makes a public runbook as the original would have.
func (c *cloud) createRunbook(ctx context.Context, name string, steps []any, extra map[string]any) error {
	body := map[string]any{"name": name, "steps": steps, "public": true, "disable_ramdisk": false, "extra": extra, "owner": nil}
	_, err := c.baremetal.Post(ctx, c.baremetal.ServiceURL("runbooks"), body, nil, &gophercloud.RequestOpts{OkCodes: []int{201}})
	return err
}

func (c *cloud) post(ctx context.Context, collection, key string, obj map[string]any) error {
	_, err := c.network.Post(ctx, c.network.ServiceURL(collection), map[string]any{key: obj}, nil, &gophercloud.RequestOpts{OkCodes: []int{201}})
	return err
}

// createTakeoverFlavor makes a flavor with a bound service profile whose metainfo is meta (as
// compact JSON with sorted keys, as the original writes it) and returns the profile's id.
func (c *cloud) createTakeoverFlavor(ctx context.Context, name, description, driver string, meta map[string]any) (string, error) {
	metainfo, err := json.Marshal(meta) // encoding/json sorts map keys and writes compactly
	if err != nil {
		return "", err
	}
	var sp struct {
		Profile struct {
			ID string `json:"id"`
		} `json:"service_profile"`
	}
	if _, err := c.network.Post(ctx, c.network.ServiceURL("service_profiles"), map[string]any{"service_profile": map[string]any{
		"driver": driver, "description": "", "enabled": true, "metainfo": string(metainfo)}}, &sp, nil); err != nil {
		return "", err
	}
	var fl struct {
		Flavor struct {
			ID string `json:"id"`
		} `json:"flavor"`
	}
	if _, err := c.network.Post(ctx, c.network.ServiceURL("flavors"), map[string]any{"flavor": map[string]any{
		"name": name, "service_type": "L3_ROUTER_NAT", "enabled": true, "description": description}}, &fl, nil); err != nil {
		return "", err
	}
	_, err = c.network.Post(ctx, c.network.ServiceURL("flavors", fl.Flavor.ID, "service_profiles"),
		map[string]any{"service_profile": map[string]any{"id": sp.Profile.ID}}, nil, nil)
	return sp.Profile.ID, err
}

// snapshot is every resource of the test as "kind/name" -> [id, what a write would change]: the
// runbooks' updated_at and extra, the ranges' revision_number, the pools' revision_number and
// tags, the flavor's description and profiles, the profile's metainfo.
func (c *cloud) snapshot(t *testing.T, ctx context.Context) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, n := range []string{"CUSTOM_TKO_KEEP", "CUSTOM_TKO_KEEP2", "CUSTOM_TKO_TERM", "CUSTOM_TKO_ORPHAN", "CUSTOM_TKO_HAND"} {
		rb, err := c.runbook(ctx, n)
		require.NoError(t, err)
		if rb != nil {
			extra, _ := json.Marshal(rb["extra"])
			out["rb/"+n] = []string{fmt.Sprint(rb["uuid"]), fmt.Sprint(rb["updated_at"]), string(extra)}
		}
	}
	for _, n := range []string{understackRangePfx + "tko-keep", "tko-keep", understackRangePfx + "tko-orphan", "tko-hand"} {
		rg, err := c.segmentRange(ctx, n)
		require.NoError(t, err)
		if rg != nil {
			out["sr/"+n] = []string{fmt.Sprint(rg["id"]), fmt.Sprint(rg["revision_number"]), fmt.Sprint(rg["minimum"], "-", rg["maximum"])}
		}
	}
	for _, n := range tkoPools {
		p, err := c.subnetPool(ctx, n)
		require.NoError(t, err)
		if p != nil {
			tags, _ := p["tags"].([]any)
			slices.SortFunc(tags, func(a, b any) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
			tagJSON, _ := json.Marshal(tags)
			out["pool/"+n] = []string{fmt.Sprint(p["id"]), fmt.Sprint(p["revision_number"]), string(tagJSON)}
		}
	}
	if f, err := c.flavor(ctx, "tko-flavor"); err == nil && f != nil {
		out["fl/tko-flavor"] = []string{fmt.Sprint(f["id"]), fmt.Sprint(f["description"]), fmt.Sprint(f["service_profiles"])}
		for _, p := range f["service_profiles"].([]any) {
			sp, err := c.serviceProfile(ctx, fmt.Sprint(p))
			require.NoError(t, err)
			out["sp/"+fmt.Sprint(p)] = []string{fmt.Sprint(sp["id"]), fmt.Sprint(sp["metainfo"])}
		}
	}
	return out
}
