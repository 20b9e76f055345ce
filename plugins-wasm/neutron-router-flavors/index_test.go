package main

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The index answers what a scan of the view answers, in the same order, after every kind of
// change the plugin's own writes make: a new flavor, a renamed or rebound one, a new profile and
// one whose metainfo or driver changed.
func TestTheViewIndexAnswersAsAScan(t *testing.T) {
	st := &state{loaded: true,
		flavors: []flavor{
			{ID: "f1", Name: "gold", ServiceProfiles: []string{"p1"}},
			{ID: "f2", Name: "silver"},
			{ID: "f3", Name: "gold", ServiceProfiles: []string{"p1", "p2"}},
		},
		profiles: []profile{
			{ID: "p1", Driver: "d", Metainfo: `{"a":1}`},
			{ID: "p2", Driver: "d", Metainfo: `{"a":1,"openstack-sync.io/managed-by":"openstack-sync"}`},
			{ID: "p3", Driver: "e", Metainfo: `{"a":1}`},
			{ID: "p4", Driver: "d", Metainfo: `not json`},
		}}
	check := func(step string) {
		t.Helper()
		for _, name := range []string{"gold", "silver", "bronze"} {
			var want []flavor
			for _, f := range st.flavors {
				if f.Name == name {
					want = append(want, f)
				}
			}
			assert.Equal(t, want, st.named(name), "%s: flavors named %s", step, name)
		}
		for _, p := range append(st.profiles, profile{ID: "none"}) {
			want := slices.ContainsFunc(st.flavors, func(f flavor) bool { return slices.Contains(f.ServiceProfiles, p.ID) })
			assert.Equal(t, want, st.bound(p.ID), "%s: is %s bound", step, p.ID)
		}
		for _, f := range st.flavors {
			got, ok := st.flavor(f.ID)
			assert.True(t, ok, step)
			assert.Equal(t, f, got, step)
		}
		for _, key := range [][2]string{{"d", `{"a":1}`}, {"e", `{"a":1}`}, {"d", `{"a":2}`}} {
			var want []int
			for i, p := range st.profiles {
				if pm := st.metaOf(p); p.Driver == key[0] && pm.user == key[1] {
					want = append(want, i)
				}
			}
			got := st.matching(key[0], key[1])
			assert.True(t, slices.Equal(want, got), "%s: profiles matching %v: want %v, got %v", step, key, want, got)
		}
	}
	check("as listed")
	st.putFlavor(flavor{ID: "f4", Name: "gold", ServiceProfiles: []string{"p3"}})
	check("a new flavor")
	st.putFlavor(flavor{ID: "f1", Name: "bronze", ServiceProfiles: []string{"p1"}})
	check("a renamed flavor")
	st.putFlavor(flavor{ID: "f3", Name: "gold", ServiceProfiles: []string{"p2"}})
	check("a flavor unbound from a profile")
	st.putProfile(profile{ID: "p5", Driver: "d", Metainfo: `{"a":1}`})
	check("a new profile")
	st.putProfile(profile{ID: "p1", Driver: "d", Metainfo: `{"a":2}`})
	check("a profile whose metainfo changed")
	st.putProfile(profile{ID: "p3", Driver: "d", Metainfo: `{"a":1}`})
	check("a profile whose driver changed")
	assert.Equal(t, []int{1, 2, 4}, st.matching("d", `{"a":1}`), "in list order")
}
