package conformance_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/conformance"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm/wasmtest"
)

// scopesSuite is the suite of the kit's own test plugin (testdata/guests/scopes): a resource the
// in-process cloud knows only as a collection registered by the suite, without tags.
func scopesSuite(t *testing.T, mode string) conformance.Suite {
	return conformance.Suite{
		Plugin:     wasmtest.BuildGuest(t, "testdata/guests", "scopes", "../../pdk"),
		APIVersion: "example.org/v1alpha1", Kind: "Scope",
		Collections: []conformance.Collection{{Path: "v2.0/scopes", Key: "scope", Attributes: []string{"name", "ip_version", "description"}}},
		CRs: []conformance.CR{
			{Name: "blue", Spec: map[string]any{"name": "blue", "ip_version": 4}},
			{Name: "green", Spec: map[string]any{"name": "green", "ip_version": 6}},
		},
		Unowned:  []conformance.Request{{Service: "network", Path: "v2.0/scopes", Body: map[string]any{"scope": map[string]any{"name": "by-hand", "ip_version": 4}}}},
		Settings: map[string]string{"MODE": mode},
	}
}

func parts(r conformance.Report) map[string][]string {
	out := map[string][]string{}
	for _, p := range r.Parts {
		out[p.Name] = p.Problems
	}
	return out
}

// Each way of breaking the contract is found by its part, and only there.
func TestCheckFindsEachBreach(t *testing.T) {
	cases := []struct {
		mode, part, want string
	}{
		{"rewrite", "converge", "a second pass over converged CRs must write nothing; it sent:\n  PUT network v2.0/scopes/"},
		{"greedy-prune", "cleanup", "a resource made by hand (unowned) was deleted"},
		{"panic-on-bad", "bad specs", `unknown field "conformanceUnknownField" at the top of spec: the plugin broke (panic) instead of returning an error`},
		{"lenient", "bad specs", `unknown field "conformanceUnknownField" at the top of spec: accepted; a bad spec must give an error: ` +
			"decode the spec strictly (pdk.ReconcileRequest.DecodeSpec, or lifecycle.DecodeFields)"},
		{"outside-grant", "grants", "requests outside the declared grants"},
		{"tags", "converge", "creating CR blue: the hook exited 1"},
		{"memo-spec-only", "memo", "was answered as before after what it made (1 resources) was deleted by hand"},
	}
	for _, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			r := scopesSuite(t, c.mode).Check(context.Background())
			t.Logf("%+v", r)
			require.False(t, r.OK())
			got := parts(r)
			require.Contains(t, got, c.part)
			require.NotEmpty(t, got[c.part], "part %s found nothing", c.part)
			assert.Contains(t, got[c.part][0], c.want)
			for name, problems := range got {
				if name != c.part {
					assert.Empty(t, problems, "part %s", name)
				}
			}
		})
	}
}

func TestAWellBehavedPluginPasses(t *testing.T) {
	s := scopesSuite(t, "")
	r := s.Check(context.Background())
	assert.True(t, r.OK(), r.Problems())
	var names []string
	for _, p := range r.Parts {
		names = append(names, p.Name)
	}
	assert.Equal(t, []string{"metadata", "suite", "converge", "memo", "cleanup", "grants", "bad specs"}, names)
	s.Run(t)
}

func TestIncompleteSuites(t *testing.T) {
	r := conformance.Suite{}.Check(context.Background())
	assert.Equal(t, []string{"metadata: the suite names no plugin module (Suite.Plugin)"}, r.Problems())
	s := scopesSuite(t, "")
	s.CRs = s.CRs[:1]
	assert.Equal(t, []string{"suite: plugin scopes: the suite needs at least two CRs (it has 1)"}, s.Check(context.Background()).Problems())
	_, err := conformance.Load("testdata/no-such-file.yaml")
	assert.ErrorContains(t, err, "no such file")
}
