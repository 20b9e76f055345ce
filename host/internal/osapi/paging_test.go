package osapi

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pagingRunbooks are the runbooks TestRunbookPages lists, in creation order: names that sort
// otherwise, two owners, two of p-b's public. Every one is created in the same second, so sorting
// by created_at is all ties.
var pagingRunbooks = []struct {
	name, owner string
	public      bool
}{
	{"CUSTOM_E", "p-a", false}, {"CUSTOM_B", "p-b", false}, {"CUSTOM_G", "p-a", false}, {"CUSTOM_A", "p-b", true},
	{"CUSTOM_H", "p-a", false}, {"CUSTOM_C", "p-b", false}, {"CUSTOM_F", "p-a", false}, {"CUSTOM_D", "p-b", true},
}

// pagingUUID is the uuid of pagingRunbooks[i].
func pagingUUID(i int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", i) }

// pagingStore holds pagingRunbooks.
func pagingStore(t testing.TB) *Store {
	t.Helper()
	now := time.Date(2026, 12, 3, 17, 0, 0, 0, time.UTC)
	s := New(Options{Now: func() time.Time { return now }, Projects: []Project{{ID: "p-a", Name: "a"}, {ID: "p-b", Name: "b"}}})
	for i, rb := range pagingRunbooks {
		_, err := s.Add("baremetal:runbooks", map[string]any{"uuid": pagingUUID(i), "name": rb.name, "owner": rb.owner,
			"public": rb.public, "steps": []any{}})
		require.NoError(t, err)
	}
	return s
}

// page lists runbooks with query as caller; it returns the status, the names shown (or the error
// text) and the next link's query ("" when there is none).
func page(t *testing.T, s *Store, caller Caller, query string) (int, []string, string) {
	t.Helper()
	q, err := url.ParseQuery(query)
	require.NoError(t, err)
	resp, ok := s.Serve(Request{Service: Baremetal, Method: http.MethodGet, Path: "v1/runbooks", Query: q, Microversion: "1.96",
		Caller: caller})
	require.True(t, ok)
	encoded, err := resp.JSON()
	require.NoError(t, err)
	var body map[string]any
	require.NoError(t, json.Unmarshal(encoded, &body))
	if resp.Status != http.StatusOK {
		return resp.Status, []string{fmt.Sprint(body["error_message"])}, ""
	}
	names := []string{}
	for _, o := range body["runbooks"].([]any) {
		names = append(names, o.(map[string]any)["name"].(string))
	}
	next := ""
	if n, ok := body["next"].(string); ok {
		u, err := url.Parse(n)
		require.NoError(t, err)
		next = u.RawQuery
	}
	return resp.Status, names, next
}

// TestRunbookPages pins how Ironic's list pages: the marker's page starts after it in the list's
// order (creation order, or sort_key's with ties in creation order, reversed by sort_dir=desc), a
// full page has a next link, a marker the caller cannot see starts the list at the top, and one
// that names no runbook by uuid is 404.
func TestRunbookPages(t *testing.T) {
	system := Caller{System: true, Admin: true}
	projectA := Caller{ProjectID: "p-a", Admin: true}
	notFound := func(marker string) string {
		return fmt.Sprintf(`{"faultcode": "Client", "faultstring": "Runbook %s could not be found.", "debuginfo": null}`, marker)
	}
	next := func(sort string, limit, i int) string {
		return sort + "fields=uuid,name&limit=" + strconv.Itoa(limit) + "&marker=" + pagingUUID(i)
	}
	const byID, byIDDesc, byName, byNameDesc, byCreated = "sort_key=id&sort_dir=asc&", "sort_key=id&sort_dir=desc&",
		"sort_key=name&sort_dir=asc&", "sort_key=name&sort_dir=desc&", "sort_key=created_at&sort_dir=asc&"
	for _, tc := range []struct {
		name   string
		caller Caller
		query  string
		status int
		want   []string
		next   string
	}{
		{"the first page", system, "limit=3", 200, []string{"CUSTOM_E", "CUSTOM_B", "CUSTOM_G"}, next(byID, 3, 2)},
		{"a marker in the middle", system, "limit=3&marker=" + pagingUUID(2), 200, []string{"CUSTOM_A", "CUSTOM_H", "CUSTOM_C"}, next(byID, 3, 5)},
		{"a short last page", system, "limit=3&marker=" + pagingUUID(5), 200, []string{"CUSTOM_F", "CUSTOM_D"}, ""},
		{"a full last page", system, "limit=4&marker=" + pagingUUID(3), 200, []string{"CUSTOM_H", "CUSTOM_C", "CUSTOM_F", "CUSTOM_D"}, next(byID, 4, 7)},
		{"the marker at the end", system, "limit=3&marker=" + pagingUUID(7), 200, []string{}, ""},
		{"no limit", system, "marker=" + pagingUUID(5), 200, []string{"CUSTOM_F", "CUSTOM_D"}, ""},
		{"desc", system, "limit=3&sort_dir=desc", 200, []string{"CUSTOM_D", "CUSTOM_F", "CUSTOM_C"}, next(byIDDesc, 3, 5)},
		{"desc from a marker", system, "limit=3&sort_dir=desc&marker=" + pagingUUID(5), 200, []string{"CUSTOM_H", "CUSTOM_A", "CUSTOM_G"}, next(byIDDesc, 3, 2)},
		{"desc from the first", system, "limit=3&sort_dir=desc&marker=" + pagingUUID(0), 200, []string{}, ""},
		{"by name", system, "limit=3&sort_key=name", 200, []string{"CUSTOM_A", "CUSTOM_B", "CUSTOM_C"}, next(byName, 3, 5)},
		{"by name from a marker", system, "limit=3&sort_key=name&marker=" + pagingUUID(5), 200, []string{"CUSTOM_D", "CUSTOM_E", "CUSTOM_F"}, next(byName, 3, 6)},
		{"by name desc from a marker", system, "limit=3&sort_key=name&sort_dir=desc&marker=" + pagingUUID(0), 200, []string{"CUSTOM_D", "CUSTOM_C", "CUSTOM_B"}, next(byNameDesc, 3, 1)},
		{"ties in creation order", system, "limit=3&sort_key=created_at&marker=" + pagingUUID(1), 200, []string{"CUSTOM_G", "CUSTOM_A", "CUSTOM_H"}, next(byCreated, 3, 4)},
		{"ties reversed by desc", system, "limit=2&sort_key=created_at&sort_dir=desc&marker=" + pagingUUID(6), 200, []string{"CUSTOM_C", "CUSTOM_H"}, "sort_key=created_at&sort_dir=desc&" + next("", 2, 4)},
		{"a project's own and the public", projectA, "limit=2", 200, []string{"CUSTOM_E", "CUSTOM_G"}, next(byID, 2, 2)},
		{"a project's from a marker", projectA, "limit=2&marker=" + pagingUUID(2), 200, []string{"CUSTOM_A", "CUSTOM_H"}, next(byID, 2, 4)},
		{"a project's last page", projectA, "limit=3&marker=" + pagingUUID(4), 200, []string{"CUSTOM_F", "CUSTOM_D"}, ""},
		{"a project's desc from a marker", projectA, "limit=3&sort_dir=desc&marker=" + pagingUUID(4), 200, []string{"CUSTOM_A", "CUSTOM_G", "CUSTOM_E"}, next(byIDDesc, 3, 0)},
		{"a marker the caller cannot see", projectA, "limit=2&marker=" + pagingUUID(1), 200, []string{"CUSTOM_E", "CUSTOM_G"}, next(byID, 2, 2)},
		{"by name from a marker the caller cannot see", projectA, "limit=2&sort_key=name&marker=" + pagingUUID(5), 200, []string{"CUSTOM_A", "CUSTOM_D"}, next(byName, 2, 7)},
		{"an unknown marker", system, "limit=2&marker=00000000-0000-4000-8000-999999999999", 404, []string{notFound("00000000-0000-4000-8000-999999999999")}, ""},
		{"a name for a marker", system, "limit=2&marker=CUSTOM_E", 404, []string{notFound("CUSTOM_E")}, ""},
		{"an unknown marker the caller could not see anyway", projectA, "marker=" + pagingUUID(99), 404, []string{notFound(pagingUUID(99))}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, names, next := page(t, pagingStore(t), tc.caller, tc.query)
			assert.Equal(t, tc.status, status)
			assert.Equal(t, tc.want, names)
			assert.Equal(t, tc.next, next)
		})
	}
}

// TestRunbookPagesFollowEveryChange walks the list a page at a time after each kind of change to
// it (a create, a delete, objects restored without the API): every page starts where the last one
// ended, whatever the store's index held before the change.
func TestRunbookPagesFollowEveryChange(t *testing.T) {
	s := pagingStore(t)
	system := Caller{System: true, Admin: true}
	walk := func() []string {
		t.Helper()
		var all []string
		query := "limit=3"
		for range 10 {
			status, names, next := page(t, s, system, query)
			require.Equal(t, http.StatusOK, status, names)
			all = append(all, names...)
			if next == "" {
				return all
			}
			query = next
		}
		t.Fatal("the pages did not end")
		return nil
	}
	names := func() []string {
		var out []string
		for _, o := range s.Objects("baremetal:runbooks") {
			out = append(out, o["name"].(string))
		}
		return out
	}
	require.Equal(t, []string{"CUSTOM_E", "CUSTOM_B", "CUSTOM_G", "CUSTOM_A", "CUSTOM_H", "CUSTOM_C", "CUSTOM_F", "CUSTOM_D"}, walk())

	resp, _ := s.Serve(Request{Service: Baremetal, Method: http.MethodDelete, Path: "v1/runbooks/" + pagingUUID(1), Microversion: "1.96", Caller: system})
	require.Equal(t, http.StatusNoContent, resp.Status)
	assert.Equal(t, names(), walk(), "after a delete")

	resp, _ = s.Serve(Request{Service: Baremetal, Method: http.MethodPost, Path: "v1/runbooks", Microversion: "1.96", Caller: system,
		Body: []byte(`{"name": "CUSTOM_NEW", "steps": [{"interface": "bios", "step": "s", "args": {}, "order": 1}]}`)})
	require.Equal(t, http.StatusCreated, resp.Status)
	assert.Equal(t, names(), walk(), "after a create")

	saved, err := s.MarshalJSON()
	require.NoError(t, err)
	s = pagingStore(t)
	walk()
	require.NoError(t, s.UnmarshalJSON(saved))
	assert.Equal(t, []string{"CUSTOM_E", "CUSTOM_G", "CUSTOM_A", "CUSTOM_H", "CUSTOM_C", "CUSTOM_F", "CUSTOM_D", "CUSTOM_NEW"}, walk(),
		"after a restore")
}

// BenchmarkRunbookPage is one page of 100 site runbooks (testdata/site-runbook.json) from a marker
// in the middle of 20,000, answered and encoded as the embedded cloud sends it: in detail, as the
// runbooks plugin lists its catalog, and with the three fields its prune asks for; system-scoped,
// and project-scoped (every runbook's visibility to check); each page put together from the
// cached encodings, and encoded on demand as before the cache.
func BenchmarkRunbookPage(b *testing.B) {
	const n = 20000
	raw, err := os.ReadFile(filepath.Join("testdata", "site-runbook.json"))
	require.NoError(b, err)
	var site map[string]any
	require.NoError(b, json.Unmarshal(raw, &site))
	s := New(Options{Projects: []Project{{ID: "p-a", Name: "a"}}})
	for i := range n {
		site["uuid"], site["name"] = pagingUUID(i), fmt.Sprintf("CUSTOM_SITE_FW_%05d", i)
		_, err := s.Add("baremetal:runbooks", site)
		require.NoError(b, err)
	}
	for _, view := range []struct {
		name  string
		query url.Values
	}{{"detail", url.Values{"detail": {"true"}}}, {"fields", url.Values{"fields": {"uuid,name,extra"}}}} {
		for _, bc := range []struct {
			name   string
			caller Caller
		}{{"system", Caller{System: true, Admin: true}}, {"project", Caller{ProjectID: "p-a", Admin: true}}} {
			for _, onDemand := range []bool{false, true} {
				name := view.name + "/" + bc.name + "/cached"
				if onDemand {
					name = view.name + "/" + bc.name + "/on-demand"
				}
				b.Run(name, func(b *testing.B) {
					s.encodeOnDemand = onDemand
					q := maps.Clone(view.query)
					q["limit"], q["marker"] = []string{"100"}, []string{pagingUUID(n / 2)}
					var size int
					for b.Loop() {
						resp, _ := s.Serve(Request{Service: Baremetal, Method: http.MethodGet, Path: "v1/runbooks", Query: q,
							Microversion: "1.96", Caller: bc.caller})
						body, err := resp.JSON()
						if resp.Status != http.StatusOK || err != nil {
							b.Fatalf("answered %d %s (%v)", resp.Status, body, err)
						}
						size = len(body)
					}
					b.ReportMetric(float64(size), "B/page")
				})
			}
		}
	}
}

// TestCopyJSONIsCloneJSON holds copyJSON, which a list page copies its objects with, to what
// encoding and decoding the value makes.
func TestCopyJSONIsCloneJSON(t *testing.T) {
	for _, v := range []any{
		nil, "text", "not \xff UTF-8", 1.5, true, 3, int64(4),
		map[string]any(nil), []any(nil), []string{"a"}, map[string]string{"a": "b"},
		map[string]any{"steps": []any{map[string]any{"order": 1, "args": map[string]any{}, "step": "s"}}, "extra": nil},
		map[string]any{"bad \xff key": "v"}, []any{1, "x", []any{2.5, nil}},
	} {
		got := copyJSON(v)
		assert.Equal(t, cloneJSON(v), got, "%#v", v)
		if m, ok := v.(map[string]any); ok && m != nil {
			got.(map[string]any)["added"] = true
			assert.NotContains(t, m, "added", "a copy shares no map with its original")
		}
	}
}
