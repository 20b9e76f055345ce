package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/pdktest"
)

// fakeNeutron holds flavors, service profiles and routers with the rules of the real service the
// plugin depends on: a profile bound to a flavor cannot be updated or deleted (409), a flavor used
// by a router cannot be deleted (409), the association answer carries the flavor's id.
type fakeNeutron struct {
	Flavors  []map[string]any `json:"flavors"`
	Profiles []map[string]any `json:"profiles"`
	Routers  []map[string]any `json:"routers"`
	nextID   int
}

func loadFake(t *testing.T) *fakeNeutron {
	t.Helper()
	b, err := os.ReadFile("testdata/neutron.json")
	require.NoError(t, err)
	f := &fakeNeutron{}
	require.NoError(t, json.Unmarshal(b, f))
	return f
}

// service returns a network client answered by f through a pdktest host that enforces the
// plugin's grants.
func (f *fakeNeutron) service(t testing.TB) (*pdk.ServiceClient, *pdktest.Host) {
	ctx := pdktest.New(t, pdktest.Options{Grants: metadata.Grants, Cloud: f.handle})
	return ctx.OpenStack("network"), pdktest.Of(t, ctx)
}

func find(items []map[string]any, id string) map[string]any {
	for _, it := range items {
		if it["id"] == id {
			return it
		}
	}
	return nil
}

func (f *fakeNeutron) boundProfile(id string) bool {
	for _, fl := range f.Flavors {
		if slices.Contains(ids(fl), id) {
			return true
		}
	}
	return false
}

func ids(fl map[string]any) []string {
	var out []string
	for _, v := range fl["service_profiles"].([]any) {
		out = append(out, v.(string))
	}
	return out
}

func body(r pdktest.Call, key string) map[string]any {
	var b map[string]map[string]any
	_ = json.Unmarshal(r.Body, &b)
	return b[key]
}

func (f *fakeNeutron) handle(r pdktest.Call) (int, any) {
	parts := strings.Split(r.Path, "/")
	notFound := func() (int, any) { return http.StatusNotFound, pdktest.NeutronFault(r.Path + " could not be found") }
	switch {
	case r.Path == flavorsPath && r.Method == http.MethodGet:
		return http.StatusOK, map[string]any{"flavors": f.Flavors}
	case r.Path == profilesPath && r.Method == http.MethodGet:
		return http.StatusOK, map[string]any{"service_profiles": f.Profiles}
	case r.Path == routersPath && r.Method == http.MethodGet:
		if r.Query.Has("flavor_id") {
			return http.StatusBadRequest, pdktest.NeutronFault("flavor_id is not a valid filter") // as the real Neutron
		}
		return http.StatusOK, map[string]any{"routers": f.Routers}
	case r.Path == flavorsPath && r.Method == http.MethodPost:
		fl := body(r, "flavor")
		f.nextID++
		fl["id"], fl["service_profiles"] = fmt.Sprintf("f-new-%d", f.nextID), []any{}
		f.Flavors = append(f.Flavors, fl)
		return http.StatusCreated, map[string]any{"flavor": fl}
	case r.Path == profilesPath && r.Method == http.MethodPost:
		p := body(r, "service_profile")
		if !strings.Contains(p["driver"].(string), "service_providers") {
			return http.StatusNotFound, pdktest.NeutronFault("Service Profile driver " + p["driver"].(string) + " could not be found.")
		}
		f.nextID++
		p["id"] = fmt.Sprintf("p-new-%d", f.nextID)
		f.Profiles = append(f.Profiles, p)
		return http.StatusCreated, map[string]any{"service_profile": p}
	case len(parts) == 3 && parts[1] == "flavors":
		fl := find(f.Flavors, parts[2])
		if fl == nil {
			return notFound()
		}
		switch r.Method {
		case http.MethodGet:
			return http.StatusOK, map[string]any{"flavor": fl}
		case http.MethodPut:
			for k, v := range body(r, "flavor") {
				fl[k] = v
			}
			return http.StatusOK, map[string]any{"flavor": fl}
		case http.MethodDelete:
			for _, rt := range f.Routers {
				if rt["flavor_id"] == fl["id"] {
					return http.StatusConflict, pdktest.NeutronFault("Flavor " + parts[2] + " is used by some service instance.")
				}
			}
			f.Flavors = slices.DeleteFunc(f.Flavors, func(x map[string]any) bool { return x["id"] == fl["id"] })
			return http.StatusNoContent, nil
		}
	case len(parts) == 3 && parts[1] == "service_profiles":
		p := find(f.Profiles, parts[2])
		if p == nil {
			return notFound()
		}
		switch r.Method {
		case http.MethodGet:
			return http.StatusOK, map[string]any{"service_profile": p}
		case http.MethodPut:
			if f.boundProfile(parts[2]) {
				return http.StatusConflict, pdktest.NeutronFault("Service Profile " + parts[2] + " is used by some service instance.")
			}
			for k, v := range body(r, "service_profile") {
				p[k] = v
			}
			return http.StatusOK, map[string]any{"service_profile": p}
		case http.MethodDelete:
			if f.boundProfile(parts[2]) {
				return http.StatusConflict, pdktest.NeutronFault("Service Profile " + parts[2] + " is used by some service instance.")
			}
			f.Profiles = slices.DeleteFunc(f.Profiles, func(x map[string]any) bool { return x["id"] == p["id"] })
			return http.StatusNoContent, nil
		}
	case len(parts) == 4 && parts[1] == "flavors" && parts[3] == "service_profiles" && r.Method == http.MethodPost:
		fl := find(f.Flavors, parts[2])
		if fl == nil {
			return notFound()
		}
		pid := body(r, "service_profile")["id"].(string)
		if slices.Contains(ids(fl), pid) {
			return http.StatusConflict, pdktest.NeutronFault("Service Profile " + pid + " is already associated with flavor " + parts[2])
		}
		fl["service_profiles"] = append(fl["service_profiles"].([]any), pid)
		// The real Neutron answers with the flavor's id here, not the profile's.
		return http.StatusCreated, map[string]any{"service_profile": map[string]any{"id": parts[2]}}
	case len(parts) == 5 && parts[1] == "flavors" && parts[3] == "service_profiles" && r.Method == http.MethodDelete:
		fl := find(f.Flavors, parts[2])
		if fl == nil || !slices.Contains(ids(fl), parts[4]) {
			return notFound()
		}
		keep := []any{}
		for _, id := range ids(fl) {
			if id != parts[4] {
				keep = append(keep, id)
			}
		}
		fl["service_profiles"] = keep
		return http.StatusNoContent, nil
	}
	return http.StatusMethodNotAllowed, pdktest.NeutronFault("no route " + r.String())
}
