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

	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/osapi/osapitest"
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

func (f *fakeNeutron) service() *osapitest.Service { return &osapitest.Service{Handle: f.handle} }

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

func body(r osapitest.Request, key string) map[string]any {
	var b map[string]map[string]any
	_ = json.Unmarshal(r.Body, &b)
	return b[key]
}

func (f *fakeNeutron) handle(r osapitest.Request) (int, any) {
	parts := strings.Split(r.Path, "/")
	notFound := func() (int, any) { return http.StatusNotFound, osapitest.Fault(r.Path + " could not be found") }
	switch {
	case r.Path == flavorsPath && r.Method == http.MethodGet:
		return http.StatusOK, map[string]any{"flavors": f.Flavors}
	case r.Path == profilesPath && r.Method == http.MethodGet:
		return http.StatusOK, map[string]any{"service_profiles": f.Profiles}
	case r.Path == routersPath && r.Method == http.MethodGet:
		if r.Query.Has("flavor_id") {
			return http.StatusBadRequest, osapitest.Fault("flavor_id is not a valid filter") // as the real Neutron
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
			return http.StatusNotFound, osapitest.Fault("Service Profile driver " + p["driver"].(string) + " could not be found.")
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
					return http.StatusConflict, osapitest.Fault("Flavor " + parts[2] + " is used by some service instance.")
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
				return http.StatusConflict, osapitest.Fault("Service Profile " + parts[2] + " is used by some service instance.")
			}
			for k, v := range body(r, "service_profile") {
				p[k] = v
			}
			return http.StatusOK, map[string]any{"service_profile": p}
		case http.MethodDelete:
			if f.boundProfile(parts[2]) {
				return http.StatusConflict, osapitest.Fault("Service Profile " + parts[2] + " is used by some service instance.")
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
			return http.StatusConflict, osapitest.Fault("Service Profile " + pid + " is already associated with flavor " + parts[2])
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
	return http.StatusMethodNotAllowed, osapitest.Fault("no route " + r.String())
}
