package main

import (
	"bytes"
	"fmt"
	"reflect"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/pdk/experimental/bench"
)

const (
	singleNode = "neutron.services.l3_router.service_providers.single_node.SingleNodeDriver"
	ha         = "neutron.services.l3_router.service_providers.ha.HaDriver"
	dvr        = "neutron.services.l3_router.service_providers.dvr.DvrDriver"
)

func ptr[T any](v T) *T { return &v }

// asa matches the owned flavor "asa" in testdata.
func asa() Spec {
	return Spec{Name: "asa", Description: "ASA routers",
		ServiceProfiles: []ProfileSpec{{Driver: singleNode, MetaInfo: map[string]any{"resource_class": "asa"}}}}
}

type recorder struct{ lines []string }

func (r *recorder) log(format string, args ...any) {
	r.lines = append(r.lines, fmt.Sprintf(format, args...))
}

// lists are the two group lists a converged group costs, in the order the plugin sends them.
var lists = []string{"GET v2.0/flavors?limit=100", "GET v2.0/service_profiles?limit=100"}

func TestReconcile(t *testing.T) {
	cases := []struct {
		name   string
		spec   func() Spec
		writes []string
		bodies []string
		notes  []string
		err    string
		check  func(t *testing.T, f *fakeNeutron)
	}{
		{name: "converged flavor costs the two group lists and writes nothing", spec: asa},
		{
			name: "absent flavor and profile are created, marked and bound",
			spec: func() Spec {
				return Spec{Name: "edge", ServiceProfiles: []ProfileSpec{{Driver: dvr, Description: "edge",
					MetaInfo: map[string]any{"vni_alloc": "auto"}}}}
			},
			writes: []string{"POST v2.0/service_profiles", "POST v2.0/flavors", "POST v2.0/flavors/f-new-2/service_profiles"},
			bodies: []string{
				`{"service_profile":{"description":"edge","driver":"` + dvr + `","enabled":true,"metainfo":"{\"openstack-sync.io/credential-group\":\"pdktest/clouds/pdktest\",\"openstack-sync.io/managed-by\":\"neutron-router-flavors\",\"openstack-sync.io/marker-version\":\"v1\",\"openstack-sync.io/source\":\"NeutronRouterFlavor\",\"vni_alloc\":\"auto\"}"}}`,
				`{"flavor":{"description":"[openstack-sync.io/neutron-router-flavors group=pdktest/clouds/pdktest]","enabled":true,"name":"edge","service_type":"L3_ROUTER_NAT"}}`,
				`{"service_profile":{"id":"p-new-1"}}`,
			},
		},
		{
			name: "an unowned flavor and a free unowned profile are adopted; the hand-bound profile stays bound",
			spec: func() Spec {
				return Spec{Name: "handmade", Description: "made by hand",
					ServiceProfiles: []ProfileSpec{{Driver: dvr, MetaInfo: map[string]any{"vni_alloc": "on"}}}}
			},
			writes: []string{"PUT v2.0/service_profiles/p-free", "PUT v2.0/flavors/f-handmade", "POST v2.0/flavors/f-handmade/service_profiles"},
			bodies: []string{
				`{"service_profile":{"description":"","enabled":true,"metainfo":"{\"openstack-sync.io/credential-group\":\"pdktest/clouds/pdktest\",\"openstack-sync.io/managed-by\":\"neutron-router-flavors\",\"openstack-sync.io/marker-version\":\"v1\",\"openstack-sync.io/source\":\"NeutronRouterFlavor\",\"vni_alloc\":\"on\"}"}}`,
				`{"flavor":{"description":"made by hand [openstack-sync.io/neutron-router-flavors group=pdktest/clouds/pdktest]","enabled":true}}`,
				`{"service_profile":{"id":"p-free"}}`,
			},
			check: func(t *testing.T, f *fakeNeutron) {
				assert.Equal(t, []string{"p-handmade", "p-free"}, ids(find(f.Flavors, "f-handmade")))
			},
		},
		{
			name: "a matching unowned profile bound elsewhere cannot be adopted and the failure says what to do",
			spec: func() Spec {
				return Spec{Name: "other", ServiceProfiles: []ProfileSpec{{Driver: ha, MetaInfo: map[string]any{"zone": "a"}}}}
			},
			err: "service profile p-handmade matches but is bound to a flavor, so Neutron will not let it be adopted; unbind it",
		},
		{
			name: "drift on an owned profile is a note, not a write",
			spec: func() Spec {
				s := asa()
				s.ServiceProfiles[0].IsEnabled, s.ServiceProfiles[0].Description = ptr(false), "new"
				return s
			},
			notes: []string{`service profile p-owned is_enabled: have=true want=false`, `service profile p-owned description: have="" want="new"`},
		},
		{
			name: "drift on an owned profile bound nowhere is fixed, then the profile is bound",
			spec: func() Spec {
				return Spec{Name: "edge", ServiceProfiles: []ProfileSpec{{Driver: dvr, Description: "edge", IsEnabled: ptr(false),
					MetaInfo: map[string]any{"vni_alloc": "off"}}}}
			},
			writes: []string{"PUT v2.0/service_profiles/p-stray", "POST v2.0/flavors", "POST v2.0/flavors/f-new-1/service_profiles"},
			bodies: []string{
				`{"service_profile":{"description":"edge","enabled":false,"metainfo":"{\"openstack-sync.io/credential-group\":\"pdktest/clouds/pdktest\",\"openstack-sync.io/managed-by\":\"neutron-router-flavors\",\"openstack-sync.io/marker-version\":\"v1\",\"openstack-sync.io/source\":\"NeutronRouterFlavor\",\"vni_alloc\":\"off\"}"}}`,
				`{"flavor":{"description":"[openstack-sync.io/neutron-router-flavors group=pdktest/clouds/pdktest]","enabled":true,"name":"edge","service_type":"L3_ROUTER_NAT"}}`,
				`{"service_profile":{"id":"p-stray"}}`,
			},
		},
		{
			name: "flavor drift is updated keeping the marker",
			spec: func() Spec {
				s := asa()
				s.Description, s.IsEnabled = "", ptr(false)
				return s
			},
			writes: []string{"PUT v2.0/flavors/f-owned"},
			bodies: []string{`{"flavor":{"description":"[openstack-sync.io/neutron-router-flavors group=pdktest/clouds/pdktest]","enabled":false}}`},
		},
		{
			name: "changed meta_info makes a new profile and unbinds the owned old one",
			spec: func() Spec {
				s := asa()
				s.ServiceProfiles[0].MetaInfo = map[string]any{"resource_class": "asa2"}
				return s
			},
			writes: []string{"POST v2.0/service_profiles", "POST v2.0/flavors/f-owned/service_profiles", "DELETE v2.0/flavors/f-owned/service_profiles/p-owned"},
			bodies: []string{
				`{"service_profile":{"description":"","driver":"` + singleNode + `","enabled":true,"metainfo":"{\"openstack-sync.io/credential-group\":\"pdktest/clouds/pdktest\",\"openstack-sync.io/managed-by\":\"neutron-router-flavors\",\"openstack-sync.io/marker-version\":\"v1\",\"openstack-sync.io/source\":\"NeutronRouterFlavor\",\"resource_class\":\"asa2\"}"}}`,
				`{"service_profile":{"id":"p-new-1"}}`,
				``,
			},
		},
		{
			name: "a flavor of another service type fails naming service_type",
			spec: func() Spec {
				return Spec{Name: "lbaas", ServiceProfiles: []ProfileSpec{{Driver: dvr}}}
			},
			err: `Router flavor "lbaas" already exists in Neutron with service_type=LOADBALANCERV2, not L3_ROUTER_NAT`,
		},
		{
			name: "meta_info may not forge the ownership key",
			spec: func() Spec {
				s := asa()
				s.ServiceProfiles[0].MetaInfo = map[string]any{ours.owner: ours.ownerValue}
				return s
			},
			err: `spec.service_profiles[0].meta_info must not set the ownership key "openstack-sync.io/managed-by"`,
		},
		{
			name: "a driver that is not a dotted path is refused",
			spec: func() Spec {
				s := asa()
				s.ServiceProfiles[0].Driver = "single_node"
				return s
			},
			err: `spec.service_profiles[0].driver must be a dotted Python path; got "single_node"`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := loadFake(t)
			svc, h := f.service(t)
			st := newState(svc, defaultOwnership())
			rec := &recorder{}
			notes, err := reconcile(st, tc.spec(), rec.log)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
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
			// Converged now: a fresh group (new cache) reads the two lists and writes nothing.
			h.Reset()
			again, err := reconcile(newState(svc, defaultOwnership()), tc.spec(), rec.log)
			require.NoError(t, err)
			assert.Equal(t, tc.notes, again)
			assert.Equal(t, lists, h.Lines())
		})
	}
}

func TestManyCRsShareTheGroupLists(t *testing.T) {
	f := loadFake(t)
	svc, h := f.service(t)
	st := newState(svc, defaultOwnership())
	rec := &recorder{}
	for range 3 {
		_, err := reconcile(st, asa(), rec.log)
		require.NoError(t, err)
	}
	assert.Equal(t, lists, h.Lines())
}

func TestPrune(t *testing.T) {
	named := func(names ...string) []Spec {
		var out []Spec
		for _, n := range names {
			out = append(out, Spec{Name: n})
		}
		return out
	}
	cases := []struct {
		name          string
		desired       []Spec
		authoritative bool
		mode          pruneMode
		routers       []string // flavor ids in use by a router
		writes        []string
		err           string
	}{
		{
			name:    "full prune deletes the owned orphan flavor, its profile and the stray owned profile",
			desired: named("asa", "handmade"), mode: full,
			writes: []string{"DELETE v2.0/flavors/f-orphan", "DELETE v2.0/service_profiles/p-orphan", "DELETE v2.0/service_profiles/p-stray"},
		},
		{
			name:    "a flavor a router uses is kept, its profile too, and the prune fails",
			desired: named("asa"), mode: full, routers: []string{"f-orphan"},
			writes: []string{"DELETE v2.0/service_profiles/p-stray"},
			err:    "router flavors still present: old (in use by 1 router(s))",
		},
		{
			name:          "authoritative empty deletes every owned flavor but never the unowned one",
			authoritative: true, mode: full,
			writes: []string{"DELETE v2.0/flavors/f-owned", "DELETE v2.0/service_profiles/p-owned",
				"DELETE v2.0/flavors/f-orphan", "DELETE v2.0/service_profiles/p-orphan", "DELETE v2.0/service_profiles/p-stray"},
		},
		{
			name: "empty and not authoritative does nothing in full mode",
			mode: full,
		},
		{
			name:    "without PRUNE only unbound owned profiles are swept",
			desired: named("asa"), mode: sweepOnly,
			writes: []string{"DELETE v2.0/service_profiles/p-stray"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := loadFake(t)
			for _, id := range tc.routers {
				f.Routers = append(f.Routers, map[string]any{"id": "r-" + id, "flavor_id": id})
			}
			svc, h := f.service(t)
			rec := &recorder{}
			err := prune(svc, ours, tc.desired, tc.authoritative, tc.mode, rec.log)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
			} else {
				require.NoError(t, err)
			}
			writes, _ := h.WriteLines()
			assert.Equal(t, tc.writes, writes)
			routerLists := 0
			for _, r := range h.Calls() {
				if r.Path == routersPath {
					routerLists++
				}
			}
			assert.LessOrEqual(t, routerLists, 1, "one router list serves every candidate flavor")
			assert.NotNil(t, find(f.Flavors, "f-handmade"), "an unowned flavor survives every prune")
			assert.NotNil(t, find(f.Profiles, "p-free"), "an unowned profile survives every prune")
		})
	}
}

// A converged group is verified once, then answered from the host's convergence memo while the
// group's view of Neutron stays the same. The verdict on any flavor can rest on every flavor and
// profile (which profile matches, which is bound), so a change to one profile makes the whole
// group reconcile in full once.
func TestConvergedFlavorsUseTheMemo(t *testing.T) {
	h, inputs := convergedGroup(40)
	h.Memo = true
	pass := func() (hits int, notes []string) {
		h.Hits = 0
		cache := map[string]any{}
		for i, in := range inputs {
			n, err := bench.ReconcileInput(h, cache, in)
			require.NoError(t, err, "CR %d", i)
			notes = append(notes, n...)
		}
		return h.Hits, notes
	}
	hits, notes := pass()
	assert.Zero(t, hits)
	assert.Empty(t, notes)
	hits, _ = pass()
	assert.Equal(t, len(inputs), hits, "every converged CR, unchanged, is answered from the memo")

	body := h.Bodies["GET "+profilesPath]
	h.Bodies["GET "+profilesPath] = bytes.Replace(body, []byte(`{"id":"p0000000-0000-4000-8000-000000000007","description":""`),
		[]byte(`{"id":"p0000000-0000-4000-8000-000000000007","description":"edited by hand"`), 1)
	require.NotEqual(t, body, h.Bodies["GET "+profilesPath])
	hits, notes = pass()
	assert.Zero(t, hits, "one profile changed: the group's view changed")
	assert.Len(t, notes, 1, "and the drift is reported for the flavor bound to it")
	hits, notes = pass()
	assert.Equal(t, len(inputs), hits, "the new view is recorded, notes and all")
	assert.Len(t, notes, 1, "the recorded result keeps the note")
}

// The group's digest covers every field the plugin reads of every flavor and profile.
func TestTheGroupDigestCoversEveryField(t *testing.T) {
	base := func() *state {
		return &state{loaded: true,
			flavors:  []flavor{{ID: "f", Name: "n", ServiceType: l3Service, Description: "d", Enabled: true, ServiceProfiles: []string{"p"}}},
			profiles: []profile{{ID: "p", Description: "d", Driver: "x.y", Enabled: true, Metainfo: "{}"}}}
	}
	ref := base().digest()
	for name, mutate := range map[string]func(st *state){
		"flavor id":           func(st *state) { st.flavors[0].ID = "g" },
		"flavor name":         func(st *state) { st.flavors[0].Name = "m" },
		"flavor type":         func(st *state) { st.flavors[0].ServiceType = "X" },
		"flavor description":  func(st *state) { st.flavors[0].Description = "e" },
		"flavor enabled":      func(st *state) { st.flavors[0].Enabled = false },
		"flavor profiles":     func(st *state) { st.flavors[0].ServiceProfiles = nil },
		"profile id":          func(st *state) { st.profiles[0].ID = "q" },
		"profile description": func(st *state) { st.profiles[0].Description = "e" },
		"profile driver":      func(st *state) { st.profiles[0].Driver = "x.z" },
		"profile enabled":     func(st *state) { st.profiles[0].Enabled = false },
		"profile metainfo":    func(st *state) { st.profiles[0].Metainfo = `{"a":1}` },
		"order":               func(st *state) { st.profiles = append(st.profiles, profile{ID: "r"}) },
		"field boundary":      func(st *state) { st.flavors[0].Name, st.flavors[0].ServiceType = "n"+l3Service, "" },
	} {
		st := base()
		mutate(st)
		assert.NotEqual(t, ref, st.digest(), name)
	}
	// The sixth, meta, is what Metainfo says.
	assert.Equal(t, 6, reflect.TypeFor[profile]().NumField(), "a new profile field must join the digest")
	assert.Equal(t, 6, reflect.TypeFor[flavor]().NumField(), "a new flavor field must join the digest")
}

// validName and validDriver accept exactly what the patterns the CRD documents do.
func TestNamesAndDriversMatchThePatterns(t *testing.T) {
	name := regexp.MustCompile(namePattern)
	driver := regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$`)
	for _, s := range []string{"", "a", "edge-1", "a.b_c-D9", "a b", "a/b", "ü", "a\n", ".", "-", "_",
		"neutron.services.l3_router.service_providers.single_node.SingleNodeDriver", "a.b", "a.", ".a", "a..b",
		"1a.b", "a.1b", "_a._b", "a.b.c", "a-b.c", "ab", "A.B9_"} {
		assert.Equal(t, name.MatchString(s), validName(s), "name %q", s)
		assert.Equal(t, driver.MatchString(s), validDriver(s), "driver %q", s)
	}
}
