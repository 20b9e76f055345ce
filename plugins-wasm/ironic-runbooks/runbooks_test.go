package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/pdk/pdktest"
	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/invalidspec"
)

// bios is the spec matching CUSTOM_BIOS_DEFAULTS in testdata, with its steps listed in another
// order than Ironic holds them.
func bios() Spec {
	return Spec{
		RunbookName: "CUSTOM_BIOS_DEFAULTS",
		Public:      true,
		Traits:      []string{"CUSTOM_BIOS_DEFAULTS"},
		Steps: []any{
			map[string]any{"interface": "management", "step": "clear_job_queue", "order": float64(10)},
			map[string]any{"interface": "bios", "step": "apply_configuration", "order": "20",
				"args": map[string]any{"settings": []any{map[string]any{"name": "LogicalProc", "value": "Enabled"}}}},
		},
	}
}

func TestReconcile(t *testing.T) {
	cases := []struct {
		name string
		max  string
		// project plays project-scoped credentials (Ironic owns new private runbooks to it).
		project string
		spec    func() Spec
		writes  []string
		bodies  []string
		notes   []string
		err     string
		check   func(t *testing.T, f *fakeIronic)
	}{
		{
			name:  "converged at 1.112 reads once and writes nothing",
			max:   "1.112",
			spec:  bios,
			notes: nil,
		},
		{
			name:  "converged at 1.96 notes the traits it cannot apply",
			max:   "1.96",
			spec:  bios,
			notes: []string{"traits CUSTOM_BIOS_DEFAULTS are not applied: Ironic offers API 1.96 and runbook traits need 1.112"},
		},
		{
			name: "absent runbook is created with the marker, traits set after, description only at 1.112",
			max:  "1.112",
			spec: func() Spec {
				s := bios()
				s.RunbookName, s.Public, s.Owner, s.Description = "CUSTOM_NEW", false, "p-1", "new one"
				s.Traits = []string{"CUSTOM_B", "CUSTOM_A"}
				s.Extra = map[string]any{"team": "metal"}
				return s
			},
			writes: []string{"POST v1/runbooks", "PUT v1/runbooks/b0000000-0000-4000-8000-000000000001/traits"},
			bodies: []string{
				`{"description":"new one","disable_ramdisk":false,"extra":{"openstack-sync.io/credential-group":"pdktest/clouds/pdktest","openstack-sync.io/managed-by":"ironic-runbooks","openstack-sync.io/marker-version":"v1","openstack-sync.io/source":"IronicRunbook","team":"metal"},"name":"CUSTOM_NEW","owner":"p-1","public":false,"steps":[{"interface":"management","step":"clear_job_queue","args":{},"order":10},{"interface":"bios","step":"apply_configuration","args":{"settings":[{"name":"LogicalProc","value":"Enabled"}]},"order":20}]}`,
				`{"traits":["CUSTOM_A","CUSTOM_B"]}`,
			},
		},
		{
			name: "absent runbook at 1.96 is created without description or traits, and both are noted",
			max:  "1.96",
			spec: func() Spec {
				s := bios()
				s.RunbookName, s.Description = "CUSTOM_NEW", "new one"
				return s
			},
			writes: []string{"POST v1/runbooks"},
			bodies: []string{`{"disable_ramdisk":false,"extra":{"openstack-sync.io/credential-group":"pdktest/clouds/pdktest","openstack-sync.io/managed-by":"ironic-runbooks","openstack-sync.io/marker-version":"v1","openstack-sync.io/source":"IronicRunbook"},"name":"CUSTOM_NEW","owner":null,"public":true,"steps":[{"interface":"management","step":"clear_job_queue","args":{},"order":10},{"interface":"bios","step":"apply_configuration","args":{"settings":[{"name":"LogicalProc","value":"Enabled"}]},"order":20}]}`},
			notes: []string{
				"traits CUSTOM_BIOS_DEFAULTS are not applied: Ironic offers API 1.96 and runbook traits need 1.112",
				"description is not applied: Ironic offers API 1.96 and runbook descriptions need 1.112",
			},
		},
		{
			name: "drifted steps and description are patched with add ops only; disable_ramdisk is a note",
			max:  "1.112",
			spec: func() Spec {
				s := bios()
				s.Steps = s.Steps[:1]
				s.DisableRamdisk = true
				s.Description = "tidy"
				return s
			},
			writes: []string{"PATCH v1/runbooks/a0000000-0000-4000-8000-000000000001"},
			bodies: []string{`[{"op":"add","path":"/steps","value":[{"interface":"management","step":"clear_job_queue","args":{},"order":10}]},{"op":"add","path":"/description","value":"tidy"}]`},
			notes: []string{"disable_ramdisk: have=false want=true; Ironic cannot change it on an existing runbook, " +
				"delete runbook CUSTOM_BIOS_DEFAULTS in Ironic to have it recreated"},
		},
		{
			name: "below 1.112 a name that is not a trait is refused before any request",
			max:  "1.96",
			spec: func() Spec { s := bios(); s.RunbookName = "bios-defaults"; return s },
			err:  `spec.runbookName "bios-defaults" must be a trait name (CUSTOM_ then A-Z, 0-9 or _) because Ironic offers API 1.96`,
		},
		{
			name: "changed traits are replaced in one request",
			max:  "1.112",
			spec: func() Spec {
				s := bios()
				s.Traits = []string{"CUSTOM_BIOS_DEFAULTS", "CUSTOM_EXTRA"}
				return s
			},
			writes: []string{"PUT v1/runbooks/a0000000-0000-4000-8000-000000000001/traits"},
			bodies: []string{`{"traits":["CUSTOM_BIOS_DEFAULTS","CUSTOM_EXTRA"]}`},
		},
		{
			name: "an unowned runbook is adopted: its extra gains the marker, its owner is kept",
			max:  "1.112",
			spec: func() Spec {
				return Spec{RunbookName: "CUSTOM_HANDMADE", Extra: map[string]any{"ticket": "OPS-12"},
					Steps: []any{map[string]any{"interface": "deploy", "step": "erase_devices_metadata", "order": float64(5)}}}
			},
			writes: []string{"PATCH v1/runbooks/a0000000-0000-4000-8000-000000000002"},
			bodies: []string{`[{"op":"add","path":"/extra","value":{"openstack-sync.io/credential-group":"pdktest/clouds/pdktest","openstack-sync.io/managed-by":"ironic-runbooks","openstack-sync.io/marker-version":"v1","openstack-sync.io/source":"IronicRunbook","ticket":"OPS-12"}}]`},
			check: func(t *testing.T, f *fakeIronic) {
				rb := f.find("CUSTOM_HANDMADE")
				assert.True(t, mine().owns(rb["extra"].(map[string]any)))
				assert.Equal(t, "p-ops", rb["owner"])
			},
		},
		{
			name: "turning an owned runbook public sends public only: Ironic drops the owner itself",
			max:  "1.112",
			spec: func() Spec {
				return Spec{RunbookName: "CUSTOM_HANDMADE", Public: true, Extra: map[string]any{"ticket": "OPS-12"},
					Steps: []any{map[string]any{"interface": "deploy", "step": "erase_devices_metadata", "order": float64(5)}}}
			},
			writes: []string{"PATCH v1/runbooks/a0000000-0000-4000-8000-000000000002"},
			bodies: []string{`[{"op":"add","path":"/extra","value":{"openstack-sync.io/credential-group":"pdktest/clouds/pdktest","openstack-sync.io/managed-by":"ironic-runbooks","openstack-sync.io/marker-version":"v1","openstack-sync.io/source":"IronicRunbook","ticket":"OPS-12"}},{"op":"add","path":"/public","value":true}]`},
		},
		{
			name: "a runbook neither public nor owned gets a note",
			max:  "1.112",
			spec: func() Spec {
				s := bios()
				s.Public = false
				return s
			},
			writes: []string{"PATCH v1/runbooks/a0000000-0000-4000-8000-000000000001"},
			bodies: []string{`[{"op":"add","path":"/public","value":false}]`},
			notes: []string{"the runbook is neither public nor owned, so no project can see it and no project-scoped token can use it; " +
				"set spec.owner to a project id or spec.public to true"},
		},
		{
			name: "a private runbook created by system-scoped credentials without an owner gets a note",
			max:  "1.112",
			spec: func() Spec {
				s := bios()
				s.RunbookName, s.Public, s.Traits = "CUSTOM_PRIVATE", false, nil
				return s
			},
			writes: []string{"POST v1/runbooks"},
			bodies: []string{`{"disable_ramdisk":false,"extra":{"openstack-sync.io/credential-group":"pdktest/clouds/pdktest","openstack-sync.io/managed-by":"ironic-runbooks","openstack-sync.io/marker-version":"v1","openstack-sync.io/source":"IronicRunbook"},"name":"CUSTOM_PRIVATE","owner":null,"public":false,"steps":[{"interface":"management","step":"clear_job_queue","args":{},"order":10},{"interface":"bios","step":"apply_configuration","args":{"settings":[{"name":"LogicalProc","value":"Enabled"}]},"order":20}]}`},
			notes: []string{"the runbook is neither public nor owned, so no project can see it and no project-scoped token can use it; " +
				"set spec.owner to a project id or spec.public to true"},
		},
		{
			name:    "a private runbook created by project-scoped credentials is owned by their project: no note, first run or next",
			max:     "1.112",
			project: "p-ops",
			spec: func() Spec {
				s := bios()
				s.RunbookName, s.Public, s.Traits = "CUSTOM_PRIVATE", false, nil
				return s
			},
			writes: []string{"POST v1/runbooks"},
			bodies: []string{`{"disable_ramdisk":false,"extra":{"openstack-sync.io/credential-group":"pdktest/clouds/pdktest","openstack-sync.io/managed-by":"ironic-runbooks","openstack-sync.io/marker-version":"v1","openstack-sync.io/source":"IronicRunbook"},"name":"CUSTOM_PRIVATE","owner":null,"public":false,"steps":[{"interface":"management","step":"clear_job_queue","args":{},"order":10},{"interface":"bios","step":"apply_configuration","args":{"settings":[{"name":"LogicalProc","value":"Enabled"}]},"order":20}]}`},
			check: func(t *testing.T, f *fakeIronic) {
				assert.Equal(t, "p-ops", f.find("CUSTOM_PRIVATE")["owner"])
			},
		},
		{
			name: "public with an owner is refused before any request",
			max:  "1.112",
			spec: func() Spec { s := bios(); s.Owner = "p-1"; return s },
			err:  "spec.public and spec.owner are both set",
		},
		{
			name: "a step without an order is refused naming it",
			max:  "1.112",
			spec: func() Spec {
				s := bios()
				s.Steps = append(s.Steps, map[string]any{"interface": "raid", "step": "create_configuration"})
				return s
			},
			err: "spec.steps[2].order must be set",
		},
		{
			name: "a non-numeric order is refused naming it",
			max:  "1.112",
			spec: func() Spec {
				s := bios()
				s.Steps[0] = map[string]any{"interface": "raid", "step": "x", "order": "first"}
				return s
			},
			err: `spec.steps[0].order must be a whole number >= 0; got "first"`,
		},
		{
			name: "an unknown interface is refused naming it",
			max:  "1.112",
			spec: func() Spec {
				s := bios()
				s.Steps[0] = map[string]any{"interface": "network", "step": "x", "order": float64(1)}
				return s
			},
			err: `spec.steps[0].interface must be one of bios, deploy, firmware, management, power, raid, vendor; got "network"`,
		},
		{
			name: "a missing runbook name is refused",
			max:  "1.112",
			spec: func() Spec { s := bios(); s.RunbookName = ""; return s },
			err:  "spec.runbookName must be set",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeIronic(t, tc.max)
			f.project = tc.project
			a, h := connectFake(t, f)
			notes, err := reconcile(a, tc.spec())
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				var ve *invalidspec.Error
				assert.ErrorAs(t, err, &ve)
				assert.Empty(t, h.Calls(), "a spec that can never converge costs no request")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.notes, notes)
			writes, bodies := h.WriteLines()
			assert.Equal(t, tc.writes, writes)
			assert.Equal(t, tc.bodies, bodies)
			if tc.check != nil {
				tc.check(t, f)
			}
			// The second pass is converged: exactly one GET, no write, the same notes.
			h.Reset()
			again, err := reconcile(a, tc.spec())
			require.NoError(t, err)
			assert.Equal(t, tc.notes, again)
			assert.Equal(t, []string{"GET v1/runbooks/" + tc.spec().RunbookName}, h.Lines())
		})
	}
}

func TestCreateRefusalsSayWhatToChange(t *testing.T) {
	cases := []struct {
		name   string
		status int
		err    string
	}{
		{name: "hidden name", status: 409, err: "a runbook of that name exists but is not visible to these credentials"},
		{name: "public needs system scope", status: 403, err: "only a system-scoped token may create a public runbook"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeIronic(t, "1.96")
			a, _ := connectFake(t, f)
			f.intercept = func(r pdktest.Call) (int, any, bool) {
				return tc.status, fault("refused"), r.Method == "POST"
			}
			s := bios()
			s.RunbookName = "CUSTOM_NEW"
			_, err := reconcile(a, s)
			require.ErrorContains(t, err, tc.err)
			assert.ErrorContains(t, err, "refused", "Ironic's own words are kept")
		})
	}
}

func TestPrune(t *testing.T) {
	desired := func(names ...string) []Spec {
		var out []Spec
		for _, n := range names {
			out = append(out, Spec{RunbookName: n})
		}
		return out
	}
	cases := []struct {
		name          string
		desired       []Spec
		authoritative bool
		inUse         []string
		deleted       []string
		unowned       []string
		requests      []string
		err           string
	}{
		{
			name:     "empty and not authoritative lists nothing and deletes nothing",
			requests: nil,
		},
		{
			name:     "owned orphan deleted, unowned kept, desired kept",
			desired:  desired("CUSTOM_BIOS_DEFAULTS"),
			deleted:  []string{"CUSTOM_ORPHAN"},
			unowned:  []string{"CUSTOM_HANDMADE"},
			requests: []string{"GET v1/runbooks?fields=uuid%2Cname%2Cextra&limit=100", "DELETE v1/runbooks/a0000000-0000-4000-8000-000000000003"},
		},
		{
			name:          "authoritative empty deletes every owned runbook",
			authoritative: true,
			deleted:       []string{"CUSTOM_BIOS_DEFAULTS", "CUSTOM_ORPHAN"},
			unowned:       []string{"CUSTOM_HANDMADE"},
			requests: []string{"GET v1/runbooks?fields=uuid%2Cname%2Cextra&limit=100",
				"DELETE v1/runbooks/a0000000-0000-4000-8000-000000000001", "DELETE v1/runbooks/a0000000-0000-4000-8000-000000000003"},
		},
		{
			name:          "a runbook in use is kept and the prune fails so the finalizer stays",
			authoritative: true,
			inUse:         []string{"CUSTOM_BIOS_DEFAULTS"},
			deleted:       []string{"CUSTOM_ORPHAN"},
			unowned:       []string{"CUSTOM_HANDMADE"},
			requests: []string{"GET v1/runbooks?fields=uuid%2Cname%2Cextra&limit=100",
				"DELETE v1/runbooks/a0000000-0000-4000-8000-000000000001", "DELETE v1/runbooks/a0000000-0000-4000-8000-000000000003"},
			err: "runbooks still present: CUSTOM_BIOS_DEFAULTS (DELETE v1/runbooks/a0000000-0000-4000-8000-000000000001: HTTP 409 Conflict: Runbook a0000000-0000-4000-8000-000000000001 is in use)",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeIronic(t, "1.96")
			for _, n := range tc.inUse {
				f.inUse[n] = true
			}
			a, h := connectFake(t, f)
			out, err := prune(a, tc.desired, tc.authoritative)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tc.deleted, out.Deleted)
			assert.Equal(t, tc.unowned, out.Unowned)
			assert.Equal(t, tc.requests, h.Lines())
		})
	}
}

func TestPruneFollowsNextLinksPastShortPages(t *testing.T) {
	f := newFakeIronic(t, "1.96")
	f.pageSize = 2 // Ironic caps pages below the asked limit: a short page is not the end.
	for i := range 5 {
		f.runbooks = append(f.runbooks, map[string]any{
			"uuid": fmt.Sprintf("c0000000-0000-4000-8000-%012d", i), "name": fmt.Sprintf("CUSTOM_GEN_%d", i),
			"extra": mine().keys(), "steps": []any{},
		})
	}
	a, h := connectFake(t, f)
	out, err := prune(a, []Spec{{RunbookName: "CUSTOM_BIOS_DEFAULTS"}}, false)
	require.NoError(t, err)
	assert.Equal(t, []string{"CUSTOM_ORPHAN", "CUSTOM_GEN_0", "CUSTOM_GEN_1", "CUSTOM_GEN_2", "CUSTOM_GEN_3", "CUSTOM_GEN_4"}, out.Deleted)
	lists := 0
	for _, r := range h.Calls() {
		if r.Method == "GET" {
			lists++
		}
	}
	assert.Equal(t, 4, lists, "8 runbooks in pages of 2 take 4 list requests")
}

func TestStepSetIgnoresOrderOfListAndSpelling(t *testing.T) {
	var fromIronic []step
	require.NoError(t, json.Unmarshal([]byte(`[{"interface":"raid","step":"a","order":2,"args":{"x":1.0}},{"interface":"bios","step":"b","order":1}]`), &fromIronic))
	spec := Spec{Steps: []any{
		map[string]any{"interface": "bios", "step": "b", "order": "1", "args": map[string]any{}},
		map[string]any{"interface": "raid", "step": "a", "order": float64(2), "args": map[string]any{"x": float64(1)}},
	}}
	want, err := spec.desiredSteps()
	require.NoError(t, err)
	assert.True(t, sameSteps(fromIronic, want))
	want[0].Args = map[string]any{"x": float64(2)}
	assert.False(t, sameSteps(fromIronic, want))
	assert.False(t, sameSteps(fromIronic, want[:1]), "a missing step is a change")
	dup := []step{want[1], want[1]}
	assert.False(t, sameSteps(dup, fromIronic), "each step matches once")
}

// A PATCH answered without the runbook: the notes follow what the patch asked Ironic to hold.
func TestNotesFollowAPatchAnsweredWithoutTheRunbook(t *testing.T) {
	cases := []struct {
		name  string
		spec  func() Spec
		notes int
	}{
		{"made private without an owner", func() Spec { s := bios(); s.Public = false; return s }, 1},
		{"made private with an owner", func() Spec { s := bios(); s.Public, s.Owner = false, "p-1"; return s }, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeIronic(t, "1.112")
			a, _ := connectFake(t, f)
			var intercept func(r pdktest.Call) (int, any, bool)
			intercept = func(r pdktest.Call) (int, any, bool) {
				if r.Method != "PATCH" {
					return 0, nil, false
				}
				f.intercept = nil // the fake applies the patch; its answer is dropped
				status, _ := f.handle(r)
				f.intercept = intercept
				return status, nil, true
			}
			f.intercept = intercept
			notes, err := reconcile(a, tc.spec())
			require.NoError(t, err)
			assert.Len(t, notes, tc.notes)
		})
	}
}

// isTraitName accepts exactly what the pattern Ironic documents for trait names does.
func TestIsTraitName(t *testing.T) {
	pattern := regexp.MustCompile(`^CUSTOM_[A-Z0-9_]+$`)
	for _, name := range []string{"CUSTOM_A", "CUSTOM_BIOS_DEFAULTS", "CUSTOM_1", "CUSTOM__", "CUSTOM_", "CUSTOM",
		"custom_A", "CUSTOM_a", "CUSTOM_A-B", "CUSTOM_A\n", "XCUSTOM_A", "CUSTOM_É", "", " CUSTOM_A"} {
		assert.Equal(t, pattern.MatchString(name), isTraitName(name), "%q", name)
	}
}
