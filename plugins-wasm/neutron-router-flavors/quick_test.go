package main

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/experimental/bench"
	"github.com/openstack-sync/openstack-sync/pdk/pdktest"
	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/compat"
)

// quickCase is a spec and the group's view of Neutron, each the base text of testdata/quick.json
// with replacements (old, new pairs), and the CR's status.id.
type quickCase struct {
	Name    string   `json:"name"`
	ID      string   `json:"id"`
	Spec    []string `json:"spec"`
	Neutron []string `json:"neutron"`
	// Quick is the verdict the quick check gives.
	Quick bool `json:"quick"`
}

type quickFixture struct {
	Spec    json.RawMessage `json:"spec"`
	Neutron json.RawMessage `json:"neutron"`
	Cases   []quickCase     `json:"cases"`
	// Metainfo are service profiles' metainfo texts and the verdict quickMeta gives.
	Metainfo []struct {
		Text  string `json:"text"`
		Quick bool   `json:"quick"`
	} `json:"metainfo"`
}

func loadQuick(t testing.TB) quickFixture {
	b, err := os.ReadFile("testdata/quick.json")
	require.NoError(t, err)
	var f quickFixture
	require.NoError(t, json.Unmarshal(b, &f))
	return f
}

func (f quickFixture) texts(c quickCase) (spec, neutron string) {
	spec, neutron = string(f.Spec), string(f.Neutron)
	for i := 0; i+1 < len(c.Spec); i += 2 {
		spec = strings.Replace(spec, c.Spec[i], c.Spec[i+1], 1)
	}
	for i := 0; i+1 < len(c.Neutron); i += 2 {
		neutron = strings.Replace(neutron, c.Neutron[i], c.Neutron[i+1], 1)
	}
	return spec, neutron
}

// TestTheQuickCheckAgreesWithTheFullPath: where the quick check finds a router flavor converged,
// the full path reconciles the same spec against the same view of Neutron without a request, a
// note or a log line, to the same result; and it does find converged the flavors a site has.
func TestTheQuickCheckAgreesWithTheFullPath(t *testing.T) {
	f := loadQuick(t)
	for _, tc := range f.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			spec, neutron := f.texts(tc)
			quick, agree := compareQuickWithFull(t, spec, neutron, tc.ID, compat.OpenStackSync)
			assert.Equal(t, tc.Quick, quick, "the quick check's verdict")
			assert.True(t, agree)
		})
	}
}

// Under the original's profile the quick check reads its markers as the full path does.
func TestTheQuickCheckUnderTheOriginalsProfile(t *testing.T) {
	f := loadQuick(t)
	spec, neutron := f.texts(quickCase{})
	neutron = strings.ReplaceAll(neutron, "[openstack-sync.io/neutron-router-flavors group=pdktest/clouds/pdktest]", "[understack-router-flavor-operator]")
	neutron = strings.ReplaceAll(neutron, `\"openstack-sync.io/credential-group\": \"pdktest/clouds/pdktest\", `, "")
	neutron = strings.ReplaceAll(neutron, `\"openstack-sync.io/credential-group\":\"pdktest/clouds/pdktest\",`, "")
	neutron = strings.ReplaceAll(neutron, "openstack-sync.io/managed-by", "_understack_router_flavor_operator")
	neutron = strings.ReplaceAll(neutron, `\"neutron-router-flavors\"`, `\"managed\"`)
	neutron = strings.ReplaceAll(neutron, "openstack-sync.io/marker-version", "_understack_router_flavor_marker_version")
	neutron = strings.ReplaceAll(neutron, "openstack-sync.io/source", "_understack_router_flavor_source")
	quick, agree := compareQuickWithFull(t, spec, neutron, "f-edge", compat.Understack)
	assert.True(t, quick, "the quick check's verdict")
	assert.True(t, agree)
	// This project's markers are another profile's there: the flavor is foreign.
	spec, neutron = f.texts(quickCase{})
	quick, agree = compareQuickWithFull(t, spec, neutron, "f-edge", compat.Understack)
	assert.False(t, quick, "the quick check's verdict on this project's flavor")
	assert.True(t, agree)
}

// FuzzQuickCheck holds the quick check to the full path for any spec, view of Neutron and
// status.id.
func FuzzQuickCheck(f *testing.F) {
	fx := loadQuick(f)
	for _, tc := range fx.Cases {
		spec, neutron := fx.texts(tc)
		f.Add(spec, neutron, tc.ID, false)
	}
	f.Add(`{}`, string(fx.Neutron), "", false)
	f.Fuzz(func(t *testing.T, spec, neutron, id string, original bool) {
		// The host sends a spec as valid JSON.
		if !json.Valid([]byte(spec)) {
			return
		}
		profile := compat.OpenStackSync
		if original {
			profile = compat.Understack
		}
		if _, agree := compareQuickWithFull(t, spec, neutron, id, profile); !agree {
			t.Fatalf("the quick check found converged what the full path does not:\nspec %s\nneutron %s\nstatus.id %q", spec, neutron, id)
		}
	})
}

// compareQuickWithFull runs the quick check and the full path, each on its own view loaded from
// neutron (Neutron's answer to both lists), and reports the quick verdict and whether the full path
// agrees with it (trivially when there is none).
func compareQuickWithFull(t *testing.T, specText, neutron, id string, profile compat.Profile) (quick, agree bool) {
	own := ownershipOf(profile)
	if profile == compat.OpenStackSync {
		own.Own = ours
	}
	view := func() (*state, *pdktest.Host, bool) {
		cloud := func(c pdktest.Call) (int, any) {
			if c.Method == http.MethodGet && (c.Path == flavorsPath || c.Path == profilesPath) {
				return http.StatusOK, []byte(neutron)
			}
			if c.Method == http.MethodGet {
				return http.StatusNotFound, pdktest.NeutronFault(c.Path + " could not be found")
			}
			return http.StatusInternalServerError, pdktest.NeutronFault("the test's Neutron takes no writes")
		}
		ctx := pdktest.New(t, pdktest.Options{Grants: metadata.Grants, Cloud: cloud})
		st := newState(network(ctx), own)
		return st, pdktest.Of(t, ctx), st.load() == nil
	}
	st, _, ok := view()
	if !ok {
		return false, true
	}
	var q quickSpec
	res := st.quickReconcile([]byte(specText), id, &q)
	if res == nil {
		return false, true
	}
	full, h, _ := view()
	h.Reset()
	rec := &recorder{}
	req := &pdk.ReconcileRequest{Object: obj, Spec: json.RawMessage(specText), Status: map[string]any{"id": id}}
	want := fullReconcile(full, req, id, rec.log)
	if lines := h.Lines(); len(lines) > 0 {
		t.Logf("the full path sends requests: %v", lines)
		return true, false
	}
	if len(rec.lines) > 0 {
		t.Logf("the full path logs: %v", rec.lines)
		return true, false
	}
	if !assert.Equal(t, want, res, "the result") {
		return true, false
	}
	return true, true
}

// A converged CR of a listed group takes the quick check through the entry point: its spec is
// never decoded and the lifecycle driver never runs. The full path allocated 159 times for such a
// CR in this test: the spec, meta_info as a map and twice as canonical JSON, the driver's closures
// and steps; what is left is the host's input (here with a whole status) and the result.
func TestAConvergedFlavorIsDecidedWithoutDecodingItsSpec(t *testing.T) {
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
	assert.Less(t, allocs, 110.0, "allocations of one converged CR")
}

// quickOwnerships are the views of ownership a metainfo is read under: this project's for the
// test's group and for another, and the original's.
func quickOwnerships() []ownership {
	other := defaultOwnership()
	other.Own.groupValue = "other/clouds/prod"
	return []ownership{defaultOwnership(), other, ownershipOf(compat.Understack)}
}

// quickMeta reads a profile's metainfo as metaOfText does, or leaves it to it.
func TestQuickMetaReadsWhatTheDecodeWould(t *testing.T) {
	for _, tc := range loadQuick(t).Metainfo {
		for _, own := range quickOwnerships() {
			_, ok := quickMeta(tc.Text, own)
			assert.Equal(t, tc.Quick, ok, tc.Text)
			requireQuickMetaAgrees(t, tc.Text, own)
		}
	}
}

func FuzzQuickMeta(f *testing.F) {
	for _, tc := range loadQuick(f).Metainfo {
		f.Add(tc.Text, uint8(0))
	}
	owns := quickOwnerships()
	f.Fuzz(func(t *testing.T, text string, which uint8) {
		requireQuickMetaAgrees(t, text, owns[int(which)%len(owns)])
	})
}

func requireQuickMetaAgrees(t *testing.T, text string, own ownership) {
	got, ok := quickMeta(text, own)
	if !ok {
		return
	}
	require.Equal(t, metaOfText(profile{Metainfo: text}, own), got, text)
}
