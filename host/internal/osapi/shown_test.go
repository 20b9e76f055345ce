package osapi

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// shownStore holds testdata/shown-pages.json's runbooks and deploy templates, on a clock that
// moves a second a request so that every change shows in updated_at.
func shownStore(t *testing.T) *Store {
	t.Helper()
	now := time.Date(2026, 12, 3, 22, 0, 0, 0, time.UTC)
	s := New(Options{Now: func() time.Time { now = now.Add(time.Second); return now },
		Projects: []Project{{ID: "p-a", Name: "a"}, {ID: "p-b", Name: "b"}}})
	raw, err := os.ReadFile(filepath.Join("testdata", "shown-pages.json"))
	require.NoError(t, err)
	var seed map[string][]map[string]any
	require.NoError(t, json.Unmarshal(raw, &seed))
	for _, ref := range []string{"baremetal:runbooks", "baremetal:deploy-templates"} {
		for _, o := range seed[ref] {
			_, err := s.Add(ref, o)
			require.NoError(t, err)
		}
	}
	return s
}

// shownReads are the list reads TestCachedPagesAreTheEncodedOnes compares, on both collections,
// at both microversions, as each caller.
var shownReads = []string{
	"",
	"detail=true",
	"detail=True&limit=2",
	"detail=true&limit=2&marker=00000000-0000-4000-8000-000000000002",
	"detail=false&limit=1",
	"fields=uuid,name,extra&limit=3",
	"fields=uuid,name,extra&limit=3&marker=00000000-0000-4000-8000-000000000003",
	"fields=name,steps,traits,description",
	"fields=",
	"fields=extra,NAME",
	"sort_key=name&sort_dir=desc&detail=true",
	"sort_key=name&detail=true&limit=2&marker=00000000-0000-4000-8000-000000000005",
	"sort_key=updated_at&sort_dir=desc&limit=3&fields=uuid,updated_at",
	"sort_dir=desc&limit=2&detail=true&marker=00000000-0000-4000-8000-000000000004",
	"limit=1000&marker=00000000-0000-4000-8000-000000000011",
}

// TestCachedPagesAreTheEncodedOnes holds Ironic's list pages, put together from each object's
// cached encoding, byte for byte to the same pages encoded from the objects on demand (the store
// before the cache), after every kind of write that changes an object between reads: creates,
// patches of each field, owner and public changes, each traits call, deletes, a uuid deleted and
// created again, objects added without the API, a restored store. A cache that kept an object's
// old encoding across a write would answer an older page than the reference.
func TestCachedPagesAreTheEncodedOnes(t *testing.T) {
	s := shownStore(t)
	system := Caller{System: true, Admin: true}
	callers := map[string]Caller{"system": system, "p-a": {ProjectID: "p-a", Admin: true}, "p-b": {ProjectID: "p-b"}}
	serve := func(c Caller, method, path, mv, query, body string) Response {
		t.Helper()
		q, err := url.ParseQuery(query)
		require.NoError(t, err)
		resp, ok := s.Serve(Request{Service: Baremetal, Method: method, Path: path, Query: q, Body: []byte(body),
			Microversion: mv, Caller: c})
		require.True(t, ok, path)
		return resp
	}
	compare := func(t *testing.T) {
		t.Helper()
		cached := 0
		for _, path := range []string{"v1/runbooks", "v1/deploy_templates"} {
			for _, mv := range []string{"1.96", "1.112"} {
				for who, c := range callers {
					for _, query := range shownReads {
						s.encodeOnDemand = false
						got := serve(c, http.MethodGet, path, mv, query, "")
						s.encodeOnDemand = true
						want := serve(c, http.MethodGet, path, mv, query, "")
						s.encodeOnDemand = false
						gotJSON, err := got.JSON()
						require.NoError(t, err)
						wantJSON, err := want.JSON()
						require.NoError(t, err)
						assert.Equal(t, want.Status, got.Status, "%s %s?%s at %s as %s", "GET", path, query, mv, who)
						assert.Equal(t, string(wantJSON), string(gotJSON), "GET %s?%s at %s as %s", path, query, mv, who)
						if got.Encoded != nil {
							cached++
						}
					}
				}
			}
		}
		require.Positive(t, cached, "no page came from the cache")
	}
	const rb1, rb2, rb3 = "v1/runbooks/00000000-0000-4000-8000-000000000001", "v1/runbooks/00000000-0000-4000-8000-000000000002",
		"v1/runbooks/00000000-0000-4000-8000-000000000003"
	var saved []byte
	for _, step := range []struct {
		name                   string
		method, path, mv, body string
		status                 int
		other                  func(t *testing.T)
	}{
		{name: "as seeded"},
		{name: "a create", method: http.MethodPost, path: "v1/runbooks", mv: "1.96", status: http.StatusCreated,
			body: `{"uuid": "00000000-0000-4000-8000-000000000006", "name": "CUSTOM_NEW", "steps": [{"interface": "bios", "step": "s", "order": "7"}], "extra": {"x": "<&>"}}`},
		{name: "a rename", method: http.MethodPatch, path: rb1, mv: "1.96", status: http.StatusOK,
			body: `[{"op": "replace", "path": "/name", "value": "CUSTOM_RENAMED"}]`},
		{name: "a step's argument", method: http.MethodPatch, path: rb1, mv: "1.96", status: http.StatusOK,
			body: `[{"op": "replace", "path": "/steps/1/args/settings/0/value", "value": "Disabled"}]`},
		{name: "the steps replaced", method: http.MethodPatch, path: rb2, mv: "1.96", status: http.StatusOK,
			body: `[{"op": "replace", "path": "/steps", "value": [{"interface": "bios", "step": "apply_configuration", "order": 1, "args": {"secret": "s"}}]}]`},
		{name: "an extra key added", method: http.MethodPatch, path: rb2, mv: "1.96", status: http.StatusOK,
			body: `[{"op": "add", "path": "/extra/change", "value": "CHG0000001"}]`},
		{name: "extra removed", method: http.MethodPatch, path: rb1, mv: "1.96", status: http.StatusOK,
			body: `[{"op": "remove", "path": "/extra"}]`},
		{name: "a description", method: http.MethodPatch, path: rb2, mv: "1.112", status: http.StatusOK,
			body: `[{"op": "add", "path": "/description", "value": "now described \u00e9"}]`},
		{name: "made public", method: http.MethodPatch, path: rb2, mv: "1.96", status: http.StatusOK,
			body: `[{"op": "replace", "path": "/public", "value": true}]`},
		{name: "given an owner", method: http.MethodPatch, path: rb3, mv: "1.96", status: http.StatusOK,
			body: `[{"op": "replace", "path": "/public", "value": false}, {"op": "replace", "path": "/owner", "value": "p-b"}]`},
		{name: "a patch that changes nothing", method: http.MethodPatch, path: rb3, mv: "1.96", status: http.StatusOK,
			body: `[{"op": "replace", "path": "/owner", "value": "p-b"}]`},
		{name: "a deploy template's steps", method: http.MethodPatch, path: "v1/deploy_templates/CUSTOM_DT_A", mv: "1.96", status: http.StatusOK,
			body: `[{"op": "replace", "path": "/steps/0/args/password", "value": "y"}, {"op": "add", "path": "/extra/k", "value": "v"}]`},
		{name: "a trait added", method: http.MethodPut, path: rb1 + "/traits/CUSTOM_EXTRA", mv: "1.112", status: http.StatusNoContent},
		{name: "a trait removed", method: http.MethodDelete, path: rb1 + "/traits/CUSTOM_HW_DELL_R760", mv: "1.112", status: http.StatusNoContent},
		{name: "the traits set", method: http.MethodPut, path: "v1/runbooks/CUSTOM_SITE_FW_00005/traits", mv: "1.112",
			status: http.StatusNoContent, body: `{"traits": ["CUSTOM_Z", "CUSTOM_A"]}`},
		{name: "the traits cleared", method: http.MethodDelete, path: rb1 + "/traits", mv: "1.112", status: http.StatusNoContent},
		{name: "saved", other: func(t *testing.T) {
			var err error
			saved, err = s.MarshalJSON()
			require.NoError(t, err)
		}},
		{name: "a delete", method: http.MethodDelete, path: rb2, mv: "1.96", status: http.StatusNoContent},
		{name: "the uuid created again", method: http.MethodPost, path: "v1/runbooks", mv: "1.96", status: http.StatusCreated,
			body: `{"uuid": "00000000-0000-4000-8000-000000000002", "name": "CUSTOM_AGAIN", "steps": [{"interface": "raid", "step": "x", "order": 1}]}`},
		{name: "added without the API", other: func(t *testing.T) {
			_, err := s.Add("baremetal:runbooks", map[string]any{"uuid": "00000000-0000-4000-8000-000000000007",
				"name": "CUSTOM_ADDED", "owner": "p-a", "steps": []any{}})
			require.NoError(t, err)
		}},
		{name: "restored", other: func(t *testing.T) { require.NoError(t, s.UnmarshalJSON(saved)) }},
		{name: "renamed after the restore", method: http.MethodPatch, path: rb1, mv: "1.96", status: http.StatusOK,
			body: `[{"op": "replace", "path": "/name", "value": "CUSTOM_RESTORED"}]`},
	} {
		t.Run(step.name, func(t *testing.T) {
			switch {
			case step.other != nil:
				step.other(t)
			case step.method != "":
				resp := serve(system, step.method, step.path, step.mv, "", step.body)
				b, _ := resp.JSON()
				require.Equal(t, step.status, resp.Status, "%s", b)
			}
			compare(t)
		})
	}
}

// TestEncodedIsWhatJSONMakesOfTheBody: Response.JSON is Encoded when set, else Body as
// encoding/json encodes it ("null" for Null).
func TestEncodedIsWhatJSONMakesOfTheBody(t *testing.T) {
	for _, tc := range []struct {
		resp Response
		want string
	}{
		{Response{Body: map[string]any{"b": "<", "a": 1}}, `{"a":1,"b":"\u003c"}`},
		{Response{Null: true}, `null`},
		{Response{Encoded: []byte(`{"x":[]}`), Body: map[string]any{"ignored": true}}, `{"x":[]}`},
	} {
		got, err := tc.resp.JSON()
		require.NoError(t, err)
		assert.Equal(t, tc.want, string(got))
	}
}
