package osapi

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunbookLookupsFollowEveryChange holds Ironic's lookups by name and uuid, answered from the
// store's index, to what the list holds after each kind of change: a create, a rename by patch, a
// delete, objects added or restored without the API.
func TestRunbookLookupsFollowEveryChange(t *testing.T) {
	s := New(Options{Projects: []Project{{ID: "p-admin", Name: "admin"}}})
	do := func(method, path, body string) (int, map[string]any) {
		t.Helper()
		resp, ok := s.Serve(Request{Service: Baremetal, Method: method, Path: path, Body: []byte(body), Microversion: "1.96",
			Caller: Caller{System: true, Admin: true}})
		require.True(t, ok, path)
		doc, _ := resp.Body.(map[string]any)
		return resp.Status, doc
	}
	create := func(name string) (int, map[string]any) {
		return do(http.MethodPost, "v1/runbooks", `{"name": "`+name+`", "steps": [{"interface": "bios", "step": "s", "args": {}, "order": 1}]}`)
	}
	status, doc := create("CUSTOM_A")
	require.Equal(t, http.StatusCreated, status, doc)
	uuid := doc["uuid"].(string)
	status, _ = do(http.MethodGet, "v1/runbooks/CUSTOM_A", "")
	require.Equal(t, http.StatusOK, status)
	status, _ = create("CUSTOM_A")
	assert.Equal(t, http.StatusConflict, status, "a taken name")

	status, doc = do(http.MethodPatch, "v1/runbooks/CUSTOM_A", `[{"op": "replace", "path": "/name", "value": "CUSTOM_B"}]`)
	require.Equal(t, http.StatusOK, status, doc)
	status, _ = do(http.MethodGet, "v1/runbooks/CUSTOM_A", "")
	assert.Equal(t, http.StatusNotFound, status, "the old name after a rename")
	status, doc = do(http.MethodGet, "v1/runbooks/CUSTOM_B", "")
	require.Equal(t, http.StatusOK, status, "the new name after a rename")
	assert.Equal(t, uuid, doc["uuid"])
	status, _ = create("CUSTOM_A")
	assert.Equal(t, http.StatusCreated, status, "a name given up by a rename")
	status, _ = create("CUSTOM_B")
	assert.Equal(t, http.StatusConflict, status, "a name taken by a rename")

	status, _ = do(http.MethodDelete, "v1/runbooks/"+uuid, "")
	require.Equal(t, http.StatusNoContent, status)
	status, _ = do(http.MethodGet, "v1/runbooks/"+uuid, "")
	assert.Equal(t, http.StatusNotFound, status, "a deleted uuid")
	status, _ = create("CUSTOM_B")
	assert.Equal(t, http.StatusCreated, status, "a name given up by a delete")

	added, err := s.Add("baremetal:runbooks", map[string]any{"name": "CUSTOM_ADDED", "steps": []any{}})
	require.NoError(t, err)
	status, doc = do(http.MethodGet, "v1/runbooks/CUSTOM_ADDED", "")
	require.Equal(t, http.StatusOK, status, "an object added without the API")
	assert.Equal(t, added["uuid"], doc["uuid"])

	saved, err := s.MarshalJSON()
	require.NoError(t, err)
	other := New(Options{Projects: []Project{{ID: "p-admin", Name: "admin"}}})
	_, _ = other.Serve(Request{Service: Baremetal, Method: http.MethodGet, Path: "v1/runbooks/CUSTOM_GONE", Microversion: "1.96",
		Caller: Caller{System: true, Admin: true}})
	require.NoError(t, other.UnmarshalJSON(saved))
	s = other
	status, _ = do(http.MethodGet, "v1/runbooks/CUSTOM_ADDED", "")
	assert.Equal(t, http.StatusOK, status, "a restored store answers from what it restored")
}
