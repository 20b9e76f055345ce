package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/experimental"
	"github.com/openstack-sync/openstack-sync/pdk/experimental/bench"
	"github.com/openstack-sync/openstack-sync/pdk/pdktest"
)

var obj = pdk.Object{Kind: "IronicRunbook", Namespace: "openstack", Name: "bios"}

func TestMetadata(t *testing.T) {
	p := pdk.Registered()
	require.NotNil(t, p)
	assert.Equal(t, "IRONIC_RUNBOOK", p.Metadata.EnvPrefix)
	assert.True(t, experimental.SkipsStatus(&p.Metadata), "the plugin never reads the CR's status, so it is not sent")
	assert.Equal(t, "ironic-runbooks", p.Metadata.BindingName)
	assert.Equal(t, pdk.Cleanup{WhenPrune: pdk.CleanupFinalizedPrune, WhenNoPrune: pdk.CleanupNone}, p.Metadata.Cleanup)
	assert.True(t, p.Metadata.HasPrune)
}

// fakeHost wires the fake Ironic to a pdktest host that enforces the plugin's grants; the fake
// sees the microversion each request carries.
func fakeHost(t *testing.T, f *fakeIronic, cache map[string]any, config map[string]string) *pdk.Context {
	return f.context(t, cache, config)
}

func TestReconcileThroughThePDKUsesTheDiscoveredMicroversion(t *testing.T) {
	for _, tc := range []struct{ max, want string }{{"1.96", "1.96"}, {"1.112", "1.112"}, {"1.200", "1.112"}} {
		t.Run(tc.max, func(t *testing.T) {
			f := newFakeIronic(t, tc.max)
			cache := map[string]any{}
			ctx := fakeHost(t, f, cache, nil)
			spec := bios()
			spec.RunbookName = "CUSTOM_FRESH"
			_, err := pdktest.Reconcile(ctx, nil, obj, spec)
			require.NoError(t, err)
			reqs := pdktest.Of(t, ctx).Requests()
			require.NotEmpty(t, reqs)
			assert.Equal(t, "/", reqs[0].Path)
			assert.Empty(t, reqs[0].Microversion, "the root document is unversioned")
			for _, r := range reqs[1:] {
				assert.Equal(t, tc.want, r.Microversion, "%s %s", r.Method, r.Path)
			}
			// A second CR of the group reuses the discovered version: one GET, nothing else.
			ctx = fakeHost(t, f, cache, nil)
			_, err = pdktest.Reconcile(ctx, nil, obj, spec)
			require.NoError(t, err)
			assert.Len(t, pdktest.Of(t, ctx).Requests(), 1)
		})
	}
}

func TestWaitForAPIRefusesAnIronicWithoutRunbooks(t *testing.T) {
	f := newFakeIronic(t, "1.82")
	err := pdk.Registered().WaitForAPI(fakeHost(t, f, nil, nil))
	require.ErrorContains(t, err, "Ironic supports API microversion 1.82 but this plugin requires 1.92")
	assert.True(t, pdk.IsPermanent(err), "an Ironic too old is not waited for")
	assert.Equal(t, "IronicTooOld", pdk.Reason(err))
}

// An invalid spec is refused before any request, as the original refuses it: the memo's check
// and the microversion discovery come after the spec is known to be valid.
func TestReconcileReportsInvalidSpecBeforeAnyRequest(t *testing.T) {
	step := map[string]any{"interface": "bios", "step": "s", "order": 1}
	cases := []struct {
		name string
		spec map[string]any
		want string
	}{
		{"public and owner", map[string]any{"runbookName": "CUSTOM_X", "public": true, "owner": "p", "steps": []any{step}},
			"spec.public and spec.owner are both set"},
		{"no name", map[string]any{"steps": []any{step}}, "spec.runbookName must be set"},
		{"no steps", map[string]any{"runbookName": "CUSTOM_X"}, "spec.steps must list at least one step"},
		{"a step of no interface Ironic has", map[string]any{"runbookName": "CUSTOM_X",
			"steps": []any{map[string]any{"interface": "disk", "step": "s", "order": 1}}}, "spec.steps[0].interface must be one of"},
		{"a negative order", map[string]any{"runbookName": "CUSTOM_X",
			"steps": []any{map[string]any{"interface": "bios", "step": "s", "order": -1}}}, "spec.steps[0].order must be a whole number"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeIronic(t, "1.112")
			ctx := fakeHost(t, f, nil, nil)
			_, err := pdktest.Reconcile(ctx, nil, obj, c.spec)
			require.ErrorContains(t, err, c.want)
			assert.Equal(t, "InvalidSpec", pdk.Reason(err))
			assert.Empty(t, pdktest.Of(t, ctx).Lines(), "no request for an invalid spec")
		})
	}
}

func TestPruneThroughThePDK(t *testing.T) {
	f := newFakeIronic(t, "1.96")
	f.inUse["CUSTOM_ORPHAN"] = true
	ctx := fakeHost(t, f, nil, nil)
	raw, _ := json.Marshal(Spec{RunbookName: "CUSTOM_BIOS_DEFAULTS"})
	err := pdk.Registered().Prune(ctx, &pdk.PruneRequest{DesiredSpecs: []json.RawMessage{raw}, Credentials: pdktest.Group})
	require.ErrorContains(t, err, "runbooks still present: CUSTOM_ORPHAN", "an incomplete delete fails the prune so the finalizer is kept")
	assert.NotNil(t, f.find("CUSTOM_ORPHAN"))
	assert.NotNil(t, f.find("CUSTOM_HANDMADE"))

	ctx = fakeHost(t, f, nil, nil)
	require.NoError(t, pdk.Registered().Prune(ctx, &pdk.PruneRequest{Credentials: pdktest.Group}))
	assert.Empty(t, pdktest.Of(t, ctx).Requests(), "an empty, non-authoritative desired set costs nothing")
}

// A prune lists every runbook itself and lets the group's catalog go: both at once did not fit
// the guest's 32 MiB at 5,000 site-shaped runbooks.
func TestPruneLetsTheGroupsCatalogGo(t *testing.T) {
	f := newFakeIronic(t, "1.96")
	listed := &catalog{listed: map[string]listedRunbook{"CUSTOM_BIOS_DEFAULTS": {raw: json.RawMessage(`{}`)}}}
	cache := map[string]any{catalogKey: listed}
	raw, _ := json.Marshal(Spec{RunbookName: "CUSTOM_BIOS_DEFAULTS"})
	ctx := fakeHost(t, f, cache, nil)
	_ = pdk.Registered().Prune(ctx, &pdk.PruneRequest{DesiredSpecs: []json.RawMessage{raw}, Credentials: pdktest.Group})
	assert.NotSame(t, listed, cache[catalogKey], "the reconciles' catalog is no longer held")
}

// A group reads its first runbooks one GET each, as the original, then lists them all once and
// serves the rest of the group from the list, kept current by its own writes.
func TestAGroupListsOnceAfterListAfterGETs(t *testing.T) {
	f := newFakeIronic(t, "1.112")
	f.pageSize = 4 // several pages: every page is read once
	var specs []Spec
	for i := range 12 {
		name := fmt.Sprintf("CUSTOM_GEN_%02d", i)
		f.runbooks = append(f.runbooks, map[string]any{"uuid": fmt.Sprintf("c0000000-0000-4000-8000-%012d", i), "name": name,
			"public": true, "owner": nil, "disable_ramdisk": false, "description": "", "traits": []any{},
			"extra": mine().keys(),
			"steps": []any{map[string]any{"interface": "raid", "step": "x", "order": 1, "args": map[string]any{}}}})
		specs = append(specs, Spec{RunbookName: name, Public: true, Steps: []any{map[string]any{"interface": "raid", "step": "x", "order": float64(1)}}})
	}
	// One spec drifted, one absent from the list: the list serves the first, a GET confirms the second.
	specs[10].Public = false
	specs[10].Owner = "p-1"
	specs = append(specs, Spec{RunbookName: "CUSTOM_NEW", Public: true, Steps: specs[0].Steps})

	cache := map[string]any{}
	var lines []string
	for _, s := range specs {
		ctx := fakeHost(t, f, cache, nil)
		res, err := pdktest.Reconcile(ctx, nil, obj, s)
		require.NoError(t, err)
		assert.Empty(t, res.Notes)
		lines = append(lines, pdktest.Of(t, ctx).Lines()...)
	}
	want := []string{"GET /"}
	for i := range defaultListAfter {
		want = append(want, fmt.Sprintf("GET v1/runbooks/CUSTOM_GEN_%02d", i))
	}
	want = append(want, "GET v1/runbooks?detail=true&limit=100", // 15 runbooks in pages of 4
		"GET v1/runbooks?detail=true&limit=100&marker=c0000000-0000-4000-8000-000000000000",
		"GET v1/runbooks?detail=true&limit=100&marker=c0000000-0000-4000-8000-000000000004",
		"GET v1/runbooks?detail=true&limit=100&marker=c0000000-0000-4000-8000-000000000008",
		"PATCH v1/runbooks/c0000000-0000-4000-8000-000000000010",
		"GET v1/runbooks/CUSTOM_NEW", "POST v1/runbooks")
	assert.Equal(t, want, lines)
	assert.Equal(t, "p-1", f.find("CUSTOM_GEN_10")["owner"])

	// The same group again is converged: nothing but the group's lookups, no write.
	var again []string
	for _, s := range specs {
		ctx := fakeHost(t, f, cache, nil)
		_, err := pdktest.Reconcile(ctx, nil, obj, s)
		require.NoError(t, err)
		again = append(again, pdktest.Of(t, ctx).Lines()...)
	}
	assert.Empty(t, again, "the group's list, kept current by its writes, serves every CR")

	// The catalog holds the listed runbooks as the JSON Ironic sent and decodes one per lookup; the
	// two this group wrote are kept as JSON too (5,000 decoded runbooks did not fit 32 MiB), in
	// place of what the list said.
	c := cache[catalogKey].(*catalog)
	assert.Len(t, slices.Collect(maps.Keys(c.listed)), 14, "the 12 generated and the fake's 3, less the one written")
	assert.Equal(t, []string{"CUSTOM_GEN_10", "CUSTOM_NEW"}, slices.Sorted(maps.Keys(c.written)))
	var listed map[string]any
	require.NoError(t, json.Unmarshal(c.listed["CUSTOM_GEN_03"].raw, &listed))
	assert.Equal(t, "c0000000-0000-4000-8000-000000000003", listed["uuid"])
	var wrote runbook
	require.NoError(t, json.Unmarshal(c.written["CUSTOM_GEN_10"], &wrote))
	assert.Equal(t, "p-1", wrote.owner(), "what the group's write left")
}

func TestListAfterIsConfigurable(t *testing.T) {
	cases := []struct {
		value string
		gets  int
		err   string
	}{
		{value: "-1", gets: 12},
		{value: "0", gets: 0},
		{value: "3", gets: 3},
		{value: "x", err: `IRONIC_RUNBOOK_LIST_AFTER="x": want a whole number >= 0, or -1 to never list`},
	}
	for _, tc := range cases {
		t.Run(tc.value, func(t *testing.T) {
			f := newFakeIronic(t, "1.112")
			cache := map[string]any{}
			gets := 0
			for i := range 12 {
				ctx := fakeHost(t, f, cache, map[string]string{"LIST_AFTER": tc.value})
				s := bios()
				_, err := pdktest.Reconcile(ctx, nil, obj, s)
				if tc.err != "" {
					require.EqualError(t, err, tc.err)
					assert.True(t, pdk.IsPermanent(err))
					return
				}
				require.NoError(t, err, i)
				for _, l := range pdktest.Of(t, ctx).Lines() {
					if l == "GET v1/runbooks/CUSTOM_BIOS_DEFAULTS" {
						gets++
					}
				}
			}
			assert.Equal(t, tc.gets, gets)
		})
	}
}

// <PREFIX>_CATALOG_MIB bounds the runbook JSON a group keeps: at 0 every listed runbook keeps
// only its digest, and a CR whose memo misses reads its runbook by GET; the outcome is the same.
func TestCatalogMiBIsConfigurable(t *testing.T) {
	f := newFakeIronic(t, "1.112")
	cache := map[string]any{}
	config := map[string]string{"LIST_AFTER": "0", "CATALOG_MIB": "0"}
	ctx := fakeHost(t, f, cache, config)
	res, err := pdktest.Reconcile(ctx, nil, obj, bios())
	require.NoError(t, err)
	assert.Empty(t, res.Notes)
	c := cache[catalogKey].(*catalog)
	assert.Zero(t, c.keepBytes)
	require.True(t, c.listed["CUSTOM_BIOS_DEFAULTS"].digested, "no JSON kept")
	assert.Nil(t, c.listed["CUSTOM_BIOS_DEFAULTS"].raw)
	assert.Equal(t, []string{"GET /", "GET v1/runbooks?detail=true&limit=100", "GET v1/runbooks/CUSTOM_BIOS_DEFAULTS"},
		pdktest.Of(t, ctx).Lines(), "listed, then read by GET for the reconcile")

	_, err = pdktest.Reconcile(fakeHost(t, f, map[string]any{}, map[string]string{"CATALOG_MIB": "-1"}), nil, obj, bios())
	require.EqualError(t, err, `IRONIC_RUNBOOK_CATALOG_MIB="-1": want a whole number of MiB from 0 to 4096`)
	assert.True(t, pdk.IsPermanent(err))
}

// A policy that lets the credentials read runbooks one by one but not list them keeps the group
// on GETs; nothing fails.
func TestAFailedListFallsBackToGETs(t *testing.T) {
	f := newFakeIronic(t, "1.112")
	f.intercept = func(r pdktest.Call) (int, any, bool) {
		return 403, fault("listing runbooks is not allowed"), r.Method == "GET" && r.Path == runbooksPath
	}
	cache := map[string]any{}
	for range defaultListAfter + 3 {
		_, err := pdktest.Reconcile(fakeHost(t, f, cache, nil), nil, obj, bios())
		require.NoError(t, err)
	}
	assert.True(t, cache[catalogKey].(*catalog).listFailed)
}

// A converged runbook is verified once, then answered from the host's convergence memo while
// its spec and its JSON in Ironic stay the same: the evidence is exactly what the reconcile
// compares with. A runbook changed in Ironic misses and is reconciled (here: patched back). With
// the catalog past its budget (here 0: no JSON kept) a listed runbook's evidence is the digest of
// its JSON, checked without a read; a miss reads the runbook by GET, and the verdicts are the same.
func TestConvergedRunbooksUseTheMemo(t *testing.T) {
	for _, tc := range []struct {
		name      string
		keepBytes int
		// firstGETs are the GETs of the first pass beyond the full pass's reads: with no JSON
		// kept, every listed runbook missing from the memo is read by GET.
		firstGETs, changedGETs int
	}{
		{"the JSON kept", defaultCatalogMiB << 20, 0, 0},
		{"digests only", 0, 250 - defaultListAfter, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, inputs := convergedGroup(250)
			h.Memo = true
			pass := func() (hits, requests int) {
				h.Hits, h.Requests = 0, 0
				cache := map[string]any{catalogKey: &catalog{listAfter: defaultListAfter, keepBytes: tc.keepBytes}}
				for i, in := range inputs {
					notes, err := bench.ReconcileInput(h, cache, in)
					require.NoError(t, err, "CR %d", i)
					require.Empty(t, notes)
				}
				return h.Hits, h.Requests
			}
			hits, first := pass()
			assert.Zero(t, hits, "nothing recorded before the first pass")
			hits, requests := pass()
			assert.Equal(t, len(inputs), hits, "every converged CR, unchanged, is answered from the memo")
			full := first - tc.firstGETs
			assert.Equal(t, full, requests, "the memo spares no read: every pass still reads what it compares")

			// Runbooks 5 (read by GET: the group lists after 8) and 150 (listed) made private in Ironic.
			for _, i := range []int{5, 150} {
				from := fmt.Sprintf(`"uuid":"a0000000-0000-4000-8000-%012d","name":"CUSTOM_RB_%d","public":true`, i, i)
				to := strings.Replace(from, "true", "false", 1)
				changed := 0
				for k, body := range h.Bodies {
					if bytes.Contains(body, []byte(from)) {
						h.Bodies[k] = bytes.Replace(body, []byte(from), []byte(to), 1)
						changed++
					}
				}
				require.Equal(t, 2, changed, "runbook %d's GET and its list page", i)
				h.Bodies[fmt.Sprintf("PATCH v1/runbooks/a0000000-0000-4000-8000-%012d", i)] = []byte(`{}`)
			}
			hits, requests = pass()
			assert.Equal(t, len(inputs)-2, hits, "only the runbooks whose JSON changed are reconciled in full")
			assert.Equal(t, full+2+tc.changedGETs, requests, "and patched back")
		})
	}
}

// In a small group every runbook is read by GET: the memo's check and the reconcile after a miss
// share that one GET.
func TestTheMemoCheckCostsNoSecondRead(t *testing.T) {
	f := newFakeIronic(t, "1.112")
	cache := map[string]any{catalogKey: &catalog{listAfter: -1}}
	ctx := pdktest.New(t, pdktest.Options{Grants: metadata.Grants, Cache: cache, Cloud: f.handle})
	_, err := pdktest.Reconcile(ctx, nil, obj, bios())
	require.NoError(t, err)
	h := pdktest.Of(t, ctx)
	lines := h.Lines()
	assert.Equal(t, 1, strings.Count(strings.Join(lines, "\n"), "GET v1/runbooks/CUSTOM_BIOS_DEFAULTS"), "%v", lines)
	ev := h.Evidence()
	require.Len(t, ev, 1)
	assert.Equal(t, "1.112", string(ev[0][1]), "the microversion the verdict was reached at")
	var rb runbook
	require.NoError(t, json.Unmarshal(ev[0][0], &rb))
	assert.Equal(t, "CUSTOM_BIOS_DEFAULTS", rb.Name, "the runbook as Ironic sent it")
}
