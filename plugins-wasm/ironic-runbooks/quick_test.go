package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/experimental"
	"github.com/openstack-sync/openstack-sync/pdk/experimental/bench"
	"github.com/openstack-sync/openstack-sync/pdk/pdktest"
)

// quickSpecText is a converged site-shaped spec; quickRunbookText is Ironic's runbook for it as
// Ironic answers at 1.112, its steps in another order, with members the plugin does not read.
const (
	quickSpecText = `{"description":"Firmware baseline","extra":{"team":"metal","site":"dfw3"},"public":true,` +
		`"runbookName":"CUSTOM_SITE_FW_1","steps":[{"args":{"settings":[{"name":"LogicalProc","value":"Enabled"}],"wait":30},` +
		`"interface":"bios","order":20,"step":"apply_configuration"},{"interface":"management","order":"10","step":"clear_job_queue"}],` +
		`"traits":["CUSTOM_SITE_FW_1","CUSTOM_HW"]}`
	quickRunbookText = `{"uuid":"a0000000-0000-4000-8000-000000000001","name":"CUSTOM_SITE_FW_1","public":true,"owner":null,` +
		`"disable_ramdisk":false,"description":"Firmware baseline","traits":["CUSTOM_HW","CUSTOM_SITE_FW_1"],` +
		`"extra":{"openstack-sync.io/credential-group":"pdktest/clouds/pdktest","openstack-sync.io/managed-by":"ironic-runbooks",` +
		`"openstack-sync.io/marker-version":"v1","openstack-sync.io/source":"IronicRunbook","site":"dfw3","team":"metal"},` +
		`"steps":[{"interface":"management","step":"clear_job_queue","args":{},"order":10},` +
		`{"interface":"bios","step":"apply_configuration","args":{"settings":[{"name":"LogicalProc","value":"Enabled"}],"wait":30},"order":20}],` +
		`"created_at":"2026-11-30T10:00:00+00:00","updated_at":null,"links":[{"href":"http://ironic/v1/runbooks/a0000000?a=1\u0026b=\"2\"","rel":"self"}]}`
)

// quickCase is a spec and Ironic's runbook, each the base text with replacements (old, new pairs).
type quickCase struct {
	name     string
	spec, rb []string
	// max is Ironic's microversion (1.112 when empty); quick the verdict the quick check gives.
	max   string
	quick bool
}

func (c quickCase) texts() (spec, rb string) {
	spec, rb = quickSpecText, quickRunbookText
	for i := 0; i+1 < len(c.spec); i += 2 {
		spec = strings.Replace(spec, c.spec[i], c.spec[i+1], 1)
	}
	for i := 0; i+1 < len(c.rb); i += 2 {
		rb = strings.Replace(rb, c.rb[i], c.rb[i+1], 1)
	}
	return spec, rb
}

var quickCases = []quickCase{
	{name: "converged", quick: true},
	{name: "converged below traitsVersion: the version's notes", max: "1.96", quick: true},
	{name: "Ironic's own spacing and member order", quick: true,
		rb: []string{`"uuid":"a0000000-0000-4000-8000-000000000001",`, ``, `"created_at"`, `"uuid": "u", "created_at"`,
			`{"name":"LogicalProc","value":"Enabled"}`, `{"value": "Enabled", "name": "LogicalProc"}`,
			`"args":{},`, `"args": { },`}},
	{name: "no args is {}", quick: true, spec: []string{`"order":"10",`, `"order":"10","args":null,`}},
	{name: "traits repeated in the spec", quick: true, spec: []string{`"CUSTOM_HW"]`, `"CUSTOM_HW","CUSTOM_HW"]`}},
	{name: "an owner both sides agree on", quick: true,
		spec: []string{`"public":true`, `"public":false,"owner":"p-1"`}, rb: []string{`"public":true,"owner":null`, `"public":false,"owner":"p-1"`}},
	{name: "escaped strings the same on both sides", quick: true,
		spec: []string{`"Enabled"`, `"En\"abled\u00e9"`, `"Firmware baseline"`, `"Firmware \u00e9"`},
		rb:   []string{`"Enabled"`, `"En\"abled\u00e9"`, `"Firmware baseline"`, `"Firmware \u00e9"`}},
	{name: "a step member the spec's map ignores", quick: true, spec: []string{`"step":"clear_job_queue"`, `"step":"clear_job_queue","note":[1,2]`}},

	// The full path writes or notes: no verdict.
	{name: "an argument changed", rb: []string{`"wait":30`, `"wait":31`}},
	{name: "the same number written otherwise", rb: []string{`"wait":30`, `"wait":30.0`}},
	{name: "the same string escaped otherwise", rb: []string{`"Enabled"`, `"\u0045nabled"`}},
	{name: "a step missing", rb: []string{`{"interface":"management","step":"clear_job_queue","args":{},"order":10},`, ``}},
	{name: "a step's order", rb: []string{`"order":10`, `"order":11`}},
	{name: "extra without the marker", rb: []string{`"openstack-sync.io/managed-by":"ironic-runbooks",`, ``}},
	{name: "extra with a key the spec lacks", rb: []string{`"site":"dfw3"`, `"site":"dfw3","x":1`}},
	{name: "extra with a key twice", rb: []string{`"site":"dfw3"`, `"team":"metal","site":"dfw3"`}},
	{name: "extra with a key twice for one it lacks", rb: []string{`"site":"dfw3"`, `"team":"metal"`}},
	{name: "a spec argument twice", spec: []string{`"wait":30`, `"wait":30,"wait":30`}, rb: []string{`"wait":30`, `"other":30,"wait":30`}},
	{name: "a trait missing", rb: []string{`"CUSTOM_HW",`, ``}},
	{name: "a description changed", rb: []string{`"description":"Firmware baseline"`, `"description":"Firmware"`}},
	{name: "not public", rb: []string{`"public":true,"owner":null`, `"public":false,"owner":"p-1"`}},
	{name: "neither public nor owned", spec: []string{`"public":true`, `"public":false`}, rb: []string{`"public":true`, `"public":false`}},
	{name: "disable_ramdisk drifted", rb: []string{`"disable_ramdisk":false`, `"disable_ramdisk":true`}},
	{name: "a member in another case", rb: []string{`"updated_at":null`, `"Public":false`}},
	{name: "a member twice", rb: []string{`"updated_at":null`, `"public":true`}},
	{name: "a step member in another case", rb: []string{`"order":10`, `"order":10,"Order":11`}},

	// The full path refuses the CR, or reads it another way.
	{name: "another group's runbook", rb: []string{`pdktest/clouds/pdktest`, `other/clouds/prod`}},
	{name: "an unknown spec member", spec: []string{`"public":true`, `"public":true,"color":"red"`}},
	{name: "a spec member in another case", spec: []string{`"public":true`, `"Public":true`}},
	{name: "a spec member twice", spec: []string{`"public":true`, `"public":false,"public":true`}},
	{name: "an order with an exponent", spec: []string{`"order":20`, `"order":2e1`}},
	{name: "an order with spaces", spec: []string{`"order":"10"`, `"order":" 10"`}},
	{name: "a number out of range", spec: []string{`"wait":30`, `"wait":1e400`}, rb: []string{`"wait":30`, `"wait":1e400`}},
	{name: "an unknown interface", spec: []string{`"interface":"bios"`, `"interface":"bogus"`}, rb: []string{`"interface":"bios"`, `"interface":"bogus"`}},
	{name: "no steps", spec: []string{`"steps":[`, `"steps":null,"x":[`}},
	{name: "public and owned", spec: []string{`"public":true`, `"public":true,"owner":"p-1"`}},
	{name: "a name Ironic below traitsVersion refuses", max: "1.96",
		spec: []string{`"runbookName":"CUSTOM_SITE_FW_1"`, `"runbookName":"site-fw"`}, rb: []string{`"name":"CUSTOM_SITE_FW_1"`, `"name":"site-fw"`}},
	{name: "an escaped extra key", spec: []string{`"team"`, `"t\u0065am"`}, rb: []string{`"team"`, `"t\u0065am"`}},
}

// TestTheQuickCheckAgreesWithTheFullPath: where the quick check finds a runbook converged, the
// full path reconciles the same texts without a write and with the same notes; and it does find
// the converged runbooks a site has.
func TestTheQuickCheckAgreesWithTheFullPath(t *testing.T) {
	for _, tc := range quickCases {
		t.Run(tc.name, func(t *testing.T) {
			spec, rb := tc.texts()
			quick, agree := compareQuickWithFull(t, spec, rb, tc.max)
			assert.Equal(t, tc.quick, quick, "the quick check's verdict")
			assert.True(t, agree)
		})
	}
}

// FuzzQuickCheck holds the quick check to the full path for any spec and runbook.
func FuzzQuickCheck(f *testing.F) {
	for _, tc := range quickCases {
		spec, rb := tc.texts()
		f.Add(spec, rb, tc.max == "1.96")
	}
	f.Fuzz(func(t *testing.T, spec, rb string, old bool) {
		// The host sends a spec as valid JSON, and the PDK reads Ironic's answer as JSON.
		if !json.Valid([]byte(spec)) {
			return
		}
		max := ""
		if old {
			max = "1.96"
		}
		if _, agree := compareQuickWithFull(t, spec, rb, max); !agree {
			t.Fatalf("the quick check found converged what the full path does not:\nspec %s\nrunbook %s", spec, rb)
		}
	})
}

// compareQuickWithFull runs the quick check and the full path on a spec and Ironic's runbook at
// microversion max (1.112 when empty) and reports the quick verdict and whether the full path
// agrees with it (trivially when there is none).
func compareQuickWithFull(t *testing.T, specText, rbText, max string) (quick, agree bool) {
	if max == "" {
		max = "1.112"
	}
	ver, err := pdk.ParseAPIVersion(max)
	require.NoError(t, err)
	cloud := func(c pdktest.Call) (int, any) {
		switch c.Method {
		case http.MethodGet, http.MethodPatch:
			return http.StatusOK, []byte(rbText)
		case http.MethodPut:
			return http.StatusNoContent, nil
		}
		return http.StatusCreated, []byte(rbText)
	}
	ctx := pdktest.New(t, pdktest.Options{Grants: metadata.Grants, Cloud: cloud})
	h := pdktest.Of(t, ctx)
	a := api{svc: ctx.OpenStack("baremetal").Microversion(max), ver: ver, own: mineOf()}

	var q quickSpec
	var quickNotes []string
	if parseQuickSpec([]byte(specText), &q) {
		name := string(q.name)
		if a.traitsSupported() || isTraitName(name) {
			raw, err := a.getRaw(name)
			if err == nil && raw != nil && quickConverged(&q, raw, a.own.Own, a.traitsSupported()) {
				quick = true
				if !a.traitsSupported() {
					quickNotes = versionNotes(nil, a.ver, q.traitList(), len(q.description) > 0)
				}
			}
		}
	}
	if !quick {
		return false, true
	}
	var spec Spec
	if err := experimental.DecodeJSONStrict([]byte(specText), &spec); err != nil {
		t.Logf("the full path refuses the spec: %v", err)
		return true, false
	}
	if err := spec.check(); err != nil {
		t.Logf("the full path refuses the spec: %v", err)
		return true, false
	}
	h.Reset()
	notes, err := reconcile(a, spec)
	if err != nil {
		t.Logf("the full path fails: %v", err)
		return true, false
	}
	for _, l := range h.Lines() {
		if !strings.Contains(l, "GET ") {
			t.Logf("the full path writes: %v", h.Lines())
			return true, false
		}
	}
	if !assert.Equal(t, notes, quickNotes, "the notes") {
		return true, false
	}
	return true, true
}

// A converged CR of a listed group takes the quick check through the entry point: its spec and
// Ironic's runbook are never decoded. The full path allocated ~240 times for such a CR (steps,
// arguments and extra as maps, twice); what is left is the host's input and the result.
func TestAConvergedCRIsDecidedWithoutDecodingItsSpec(t *testing.T) {
	h, inputs := convergedGroup(20)
	cache := map[string]any{}
	for _, in := range inputs {
		notes, err := bench.ReconcileInput(h, cache, in)
		require.NoError(t, err)
		require.Empty(t, notes)
	}
	allocs := testing.AllocsPerRun(20, func() {
		if _, err := bench.ReconcileInput(h, cache, inputs[len(inputs)-1]); err != nil {
			t.Fatal(err)
		}
	})
	assert.Less(t, allocs, 120.0, "allocations of one converged CR")
}

// listedName reads a listed runbook's name and traits as the decode it spares does, or leaves
// the runbook to that decode.
func TestListedNameReadsWhatTheDecodeWould(t *testing.T) {
	for _, tc := range []struct {
		item   string
		quick  bool
		name   string
		traits bool
	}{
		{item: quickRunbookText, quick: true, name: "CUSTOM_SITE_FW_1", traits: true},
		{item: `{"uuid":"u","name":"A","traits":null}`, quick: true, name: "A"},
		{item: `{"uuid":"u","name":"A"}`, quick: true, name: "A"},
		{item: `{"name" : "A" , "traits" : [ ] }`, quick: true, name: "A", traits: true},
		{item: `{"name":"\u0041"}`},
		{item: `{"Name":"A"}`},
		{item: `{"name":"A","NAME":"B"}`},
		{item: `{"name":"A","name":"B"}`},
		{item: `{"name":"A","Traits":[]}`},
		{item: `{"uuid":"u"}`},
		{item: `{"name":null}`},
	} {
		name, traits, ok := listedName([]byte(tc.item))
		assert.Equal(t, tc.quick, ok, tc.item)
		if ok {
			assert.Equal(t, tc.name, string(name), tc.item)
			assert.Equal(t, tc.traits, traits, tc.item)
		}
		requireListedNameAgrees(t, tc.item)
	}
}

func FuzzListedName(f *testing.F) {
	for _, s := range []string{quickRunbookText, `{"name":"A","traits":null}`, `{"name":"A","Traits":[1]}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, item string) {
		// A page's items are valid JSON: the PDK's decode of the page checks them.
		if json.Valid([]byte(item)) {
			requireListedNameAgrees(t, item)
		}
	})
}

func requireListedNameAgrees(t *testing.T, item string) {
	name, traits, ok := listedName([]byte(item))
	if !ok {
		return
	}
	var rb struct {
		Name   string          `json:"name"`
		Traits json.RawMessage `json:"traits"`
	}
	require.NoError(t, experimental.DecodeJSON([]byte(item), &rb), item)
	require.Equal(t, rb.Name, string(name), item)
	require.Equal(t, rb.Traits != nil && string(rb.Traits) != "null", traits, item)
}
