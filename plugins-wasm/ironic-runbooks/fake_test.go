package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/pdktest"
	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/compat"
)

// fakeIronic holds runbooks and applies the rules of the real service that matter here: runbooks
// by name or uuid, JSON patch with "add", traits and descriptions only at 1.112, 409 for runbooks
// marked in use, and marker pagination with a "next" link.
type fakeIronic struct {
	max   string
	asked pdk.APIVersion // the microversion of the last versioned request; the fake refuses what it does not allow
	// intercept, when set, answers a request before the fake does (ok true).
	intercept func(c pdktest.Call) (status int, body any, ok bool)
	runbooks  []map[string]any
	inUse     map[string]bool
	pageSize  int
	nextID    int
	// project, when set, plays project-scoped credentials: Ironic makes their project the owner
	// of a private runbook created without one.
	project string
}

func newFakeIronic(t *testing.T, max string) *fakeIronic {
	t.Helper()
	b, err := os.ReadFile("testdata/runbooks.json")
	require.NoError(t, err)
	f := &fakeIronic{max: max, inUse: map[string]bool{}, pageSize: 1000}
	require.NoError(t, json.Unmarshal(b, &f.runbooks))
	return f
}

// client returns a baremetal client answered by f through a pdktest host that enforces the
// plugin's grants, with cache as the group cache.
func (f *fakeIronic) client(t testing.TB, cache map[string]any) (*pdk.ServiceClient, *pdktest.Host) {
	ctx := f.context(t, cache, nil)
	return ctx.OpenStack("baremetal"), pdktest.Of(t, ctx)
}

func (f *fakeIronic) context(t testing.TB, cache map[string]any, config map[string]string) *pdk.Context {
	return pdktest.New(t, pdktest.Options{Grants: metadata.Grants, Cache: cache, Config: config, Cloud: f.handle})
}

func (f *fakeIronic) find(id string) map[string]any {
	for _, rb := range f.runbooks {
		if rb["uuid"] == id || rb["name"] == id {
			return rb
		}
	}
	return nil
}

func fault(msg string) any {
	inner, _ := json.Marshal(map[string]any{"faultstring": msg, "debuginfo": nil})
	return map[string]any{"error_message": string(inner)}
}

func (f *fakeIronic) view(rb map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range rb {
		if (k == "traits" || k == "description") && f.asked.Less(traitsVersion) {
			continue
		}
		out[k] = v
	}
	return out
}

func (f *fakeIronic) handle(r pdktest.Call) (int, any) {
	if r.Microversion != "" {
		v, err := pdk.ParseAPIVersion(r.Microversion)
		if err != nil {
			return http.StatusNotAcceptable, fault(err.Error())
		}
		f.asked = v
	}
	if f.intercept != nil {
		if status, body, ok := f.intercept(r); ok {
			return status, body
		}
	}
	if r.Path == "/" {
		return http.StatusOK, map[string]any{
			"name":            "OpenStack Ironic API",
			"versions":        []any{map[string]any{"id": "v1", "status": "CURRENT", "version": f.max, "min_version": "1.1"}},
			"default_version": map[string]any{"id": "v1", "version": f.max},
		}
	}
	rest, ok := strings.CutPrefix(r.Path, runbooksPath)
	if !ok {
		return http.StatusNotFound, fault("no route " + r.String())
	}
	parts := strings.Split(strings.TrimPrefix(rest, "/"), "/")
	switch {
	case rest == "" && r.Method == http.MethodGet:
		return f.list(r)
	case rest == "" && r.Method == http.MethodPost:
		var body map[string]any
		_ = json.Unmarshal(r.Body, &body)
		if f.asked.Less(traitsVersion) {
			for _, k := range []string{"description", "traits"} {
				if _, ok := body[k]; ok {
					return http.StatusBadRequest, fault("Unknown attribute for argument runbook: " + k)
				}
			}
		}
		if f.find(body["name"].(string)) != nil {
			return http.StatusConflict, fault("A runbook with name " + body["name"].(string) + " already exists.")
		}
		f.nextID++
		body["uuid"] = fmt.Sprintf("b0000000-0000-4000-8000-%012d", f.nextID)
		body["traits"] = []any{}
		if f.project != "" && body["owner"] == nil && body["public"] != true {
			body["owner"] = f.project
		}
		f.runbooks = append(f.runbooks, body)
		return http.StatusCreated, f.view(body)
	case len(parts) == 1 && r.Method == http.MethodGet:
		if rb := f.find(parts[0]); rb != nil {
			return http.StatusOK, f.view(rb)
		}
		return http.StatusNotFound, fault("Runbook " + parts[0] + " could not be found.")
	case len(parts) == 1 && r.Method == http.MethodPatch:
		rb := f.find(parts[0])
		if rb == nil {
			return http.StatusNotFound, fault("Runbook " + parts[0] + " could not be found.")
		}
		var ops []patchOp
		_ = json.Unmarshal(r.Body, &ops)
		for _, op := range ops {
			if op.Op != "add" {
				return http.StatusBadRequest, fault("unexpected op " + op.Op)
			}
			key := strings.TrimPrefix(op.Path, "/")
			if !slices.Contains([]string{"extra", "name", "steps", "description", "public", "owner"}, key) {
				return http.StatusBadRequest, fault("Cannot patch " + op.Path)
			}
			if key == "description" && f.asked.Less(traitsVersion) {
				return http.StatusBadRequest, fault("description needs 1.112")
			}
			var v any
			b, _ := json.Marshal(op.Value)
			_ = json.Unmarshal(b, &v)
			rb[key] = v
		}
		if rb["public"] == true {
			rb["owner"] = nil // making a runbook public drops its owner on the real server
		}
		return http.StatusOK, f.view(rb)
	case len(parts) == 1 && r.Method == http.MethodDelete:
		rb := f.find(parts[0])
		if rb == nil {
			return http.StatusNotFound, fault("Runbook " + parts[0] + " could not be found.")
		}
		if f.inUse[rb["name"].(string)] {
			return http.StatusConflict, fault("Runbook " + parts[0] + " is in use")
		}
		f.runbooks = slices.DeleteFunc(f.runbooks, func(x map[string]any) bool { return x["uuid"] == rb["uuid"] })
		return http.StatusNoContent, nil
	case len(parts) == 2 && parts[1] == "traits" && r.Method == http.MethodPut:
		if f.asked.Less(traitsVersion) {
			return http.StatusNotFound, fault("The requested version does not support runbook traits")
		}
		rb := f.find(parts[0])
		if rb == nil {
			return http.StatusNotFound, fault("Runbook " + parts[0] + " could not be found.")
		}
		var body struct {
			Traits []string `json:"traits"`
		}
		_ = json.Unmarshal(r.Body, &body)
		rb["traits"] = body.Traits
		return http.StatusNoContent, nil
	}
	return http.StatusMethodNotAllowed, fault("no route " + r.String())
}

// listFields are the fields a list shows, as Ironic picks them: detail=true shows every one,
// fields those named (never both: 400), neither uuid and name.
func listFields(r pdktest.Call) (fields []string, status int, body any) {
	detail, _ := strconv.ParseBool(r.Query.Get("detail"))
	if _, ok := r.Query["fields"]; !ok {
		if detail {
			return nil, 0, nil
		}
		return []string{"uuid", "name"}, 0, nil
	}
	if detail {
		return nil, http.StatusBadRequest, fault("Can not specify ?detail=True and fields in the same request.")
	}
	for _, f := range strings.Split(r.Query.Get("fields"), ",") {
		fields = append(fields, strings.TrimSpace(f))
	}
	return fields, 0, nil
}

// shown is a listed runbook with only fields (nil: all of them); a field no runbook has is
// refused, as Ironic refuses it for each runbook it shows.
func shown(rb map[string]any, fields []string) (map[string]any, any) {
	if fields == nil {
		return rb, nil
	}
	out := map[string]any{}
	for _, k := range fields {
		v, ok := rb[k]
		if !ok && !slices.Contains([]string{"created_at", "updated_at", "public", "owner", "disable_ramdisk", "extra", "steps"}, k) {
			return nil, fault(fmt.Sprintf("Field(s) %q are not valid", k))
		}
		out[k] = v
	}
	return out, nil
}

func (f *fakeIronic) list(r pdktest.Call) (int, any) {
	fields, status, refusal := listFields(r)
	if status != 0 {
		return status, refusal
	}
	limit, _ := strconv.Atoi(r.Query.Get("limit"))
	if limit <= 0 || limit > f.pageSize {
		limit = f.pageSize
	}
	start := 0
	if m := r.Query.Get("marker"); m != "" {
		start = slices.IndexFunc(f.runbooks, func(x map[string]any) bool { return x["uuid"] == m }) + 1
	}
	end := min(start+limit, len(f.runbooks))
	page := []any{}
	for _, rb := range f.runbooks[start:end] {
		item, refusal := shown(f.view(rb), fields)
		if refusal != nil {
			return http.StatusBadRequest, refusal
		}
		page = append(page, item)
	}
	resp := map[string]any{"runbooks": page}
	if end < len(f.runbooks) {
		args := ""
		if fields != nil {
			args = "fields=" + strings.Join(fields, ",") + "&"
		}
		resp["next"] = "http://ironic/v1/runbooks?" + args + "limit=" + strconv.Itoa(limit) + "&marker=" + f.runbooks[end-1]["uuid"].(string)
	}
	return http.StatusOK, resp
}

// connectFake negotiates the version like the plugin does and forgets the requests that took.
func connectFake(t *testing.T, f *fakeIronic) (api, *pdktest.Host) {
	t.Helper()
	c, h := f.client(t, nil)
	ver, err := c.NegotiateMicroversion("v1", runbooksVersion, newestKnown)
	require.NoError(t, err)
	f.asked = ver
	h.Reset()
	return api{svc: c.Microversion(ver.String()), ver: ver, own: mineOf()}, h
}

// mineOf is this project's ownership for pdktest's credential group (pdktest.Group), which
// pdktest's requests name: what a reconcile under test writes and its prune deletes.
func mineOf() ownership {
	o := ownershipOf(compat.OpenStackSync)
	o.Own = mine()
	return o
}

func mine() markerSet {
	m, err := markersOf[compat.OpenStackSync].InGroup(pdktest.Group)
	if err != nil {
		panic(err)
	}
	return m
}
