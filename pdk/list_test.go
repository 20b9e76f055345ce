package pdk_test

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/pdktest"
)

type item struct {
	ID   string `json:"id"`
	UUID string `json:"uuid"`
}

func itemID(i *item) string   { return i.ID }
func itemUUID(i *item) string { return i.UUID }

// pagedCloud serves n items in pages of at most size (whatever limit asks: a service may cap a
// page below it), with a next link in the service's shape after every page but the last.
func pagedCloud(n, size int, ironic bool) pdktest.Cloud {
	return func(c pdktest.Call) (int, any) {
		start := 0
		if m := c.Query.Get("marker"); m != "" {
			fmt.Sscanf(m, "id-%d", &start)
			start++
		}
		limit, _ := strconv.Atoi(c.Query.Get("limit"))
		if limit <= 0 || limit > size {
			limit = size
		}
		items := []any{}
		for i := start; i < n && len(items) < limit; i++ {
			items = append(items, map[string]any{"id": fmt.Sprintf("id-%d", i), "uuid": fmt.Sprintf("id-%d", i)})
		}
		body := map[string]any{"things": items}
		if start+len(items) < n {
			href := fmt.Sprintf("http://x/things?marker=id-%d", start+len(items)-1)
			if ironic {
				body["next"] = href
			} else {
				body["things_links"] = []any{map[string]any{"rel": "next", "href": href}}
			}
		}
		return 200, body
	}
}

func TestListFollowsNextLinks(t *testing.T) {
	cases := []struct {
		name    string
		n, size int
		ironic  bool
		calls   []string
		limit   string
	}{
		{"neutron, one page", 3, 100, false, []string{"GET v2.0/things?fields=id&limit=100"}, ""},
		{"neutron, pages", 7, 3, false, []string{"GET v2.0/things?fields=id&limit=100",
			"GET v2.0/things?fields=id&limit=100&marker=id-2", "GET v2.0/things?fields=id&limit=100&marker=id-5"}, ""},
		{"neutron, empty", 0, 3, false, []string{"GET v2.0/things?fields=id&limit=100"}, ""},
		{"ironic, short pages are not the end", 5, 2, true, []string{"GET v2.0/things?fields=id&limit=100",
			"GET v2.0/things?fields=id&limit=100&marker=id-1", "GET v2.0/things?fields=id&limit=100&marker=id-3"}, ""},
		{"the caller's limit is kept", 5, 3, true, []string{"GET v2.0/things?fields=id&limit=1000",
			"GET v2.0/things?fields=id&limit=1000&marker=id-2"}, "1000"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := pdktest.New(t, pdktest.Options{AllowAll: true, Cloud: pagedCloud(tc.n, tc.size, tc.ironic)})
			c := ctx.OpenStack("network")
			list := pdk.ListNeutron[item]
			id := itemID
			if tc.ironic {
				list, id = pdk.ListIronic[item], itemUUID
			}
			query := url.Values{"fields": {"id"}}
			if tc.limit != "" {
				query.Set("limit", tc.limit)
			}
			want := maps.Clone(query)
			items, err := list(c, "v2.0/things", "things", query, id)
			require.NoError(t, err)
			assert.Len(t, items, tc.n)
			for i, it := range items {
				assert.Equal(t, fmt.Sprintf("id-%d", i), it.ID)
			}
			assert.Equal(t, tc.calls, pdktest.Of(t, ctx).Lines())
			assert.Equal(t, want, query, "the caller's query is not changed")
		})
	}
}

// EachNeutron and EachIronic hand over the same items a page at a time, and stop at fn's error.
func TestEachHandsOverOnePageAtATime(t *testing.T) {
	for _, ironic := range []bool{false, true} {
		ctx := pdktest.New(t, pdktest.Options{AllowAll: true, Cloud: pagedCloud(7, 3, ironic)})
		each := pdk.EachNeutron[item]
		id := itemID
		if ironic {
			each, id = pdk.EachIronic[item], itemUUID
		}
		var pages [][]string
		require.NoError(t, each(ctx.OpenStack("network"), "v2.0/things", "things", nil, id, func(page []item) error {
			var ids []string
			for _, it := range page {
				ids = append(ids, it.ID)
			}
			pages = append(pages, ids)
			return nil
		}))
		assert.Equal(t, [][]string{{"id-0", "id-1", "id-2"}, {"id-3", "id-4", "id-5"}, {"id-6"}}, pages, "ironic=%v", ironic)

		ctx = pdktest.New(t, pdktest.Options{AllowAll: true, Cloud: pagedCloud(7, 3, ironic)})
		stop := errors.New("enough")
		err := each(ctx.OpenStack("network"), "v2.0/things", "things", nil, id, func([]item) error { return stop })
		assert.ErrorIs(t, err, stop)
		assert.Len(t, pdktest.Of(t, ctx).Lines(), 1, "no page after fn's error")
	}
}

func TestListRefusesPaginationThatDoesNotAdvance(t *testing.T) {
	cases := []struct {
		name string
		page map[string]any
		err  string
	}{
		{"same marker again", map[string]any{"things": []any{map[string]any{"id": "same"}},
			"things_links": []any{map[string]any{"rel": "next", "href": "http://x"}}}, "pagination did not advance past marker same"},
		{"last item without id", map[string]any{"things": []any{map[string]any{"name": "x"}},
			"things_links": []any{map[string]any{"rel": "next", "href": "http://x"}}}, "ends in an item without an id"},
		{"items not a list", map[string]any{"things": "x"}, `GET v2.0/things: unreadable answer: json: cannot unmarshal string into Go struct field .things`},
		{"links not a list", map[string]any{"things": []any{}, "things_links": 3}, `unreadable answer: json: cannot unmarshal number into Go struct field .things_links`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := pdktest.New(t, pdktest.Options{AllowAll: true, Cloud: func(pdktest.Call) (int, any) { return 200, tc.page }})
			_, err := pdk.ListNeutron(ctx.OpenStack("network"), "v2.0/things", "things", nil, itemID)
			require.ErrorContains(t, err, tc.err)
		})
	}
}

func TestListReturnsTheHTTPError(t *testing.T) {
	ctx := pdktest.New(t, pdktest.Options{AllowAll: true, Cloud: func(pdktest.Call) (int, any) {
		return 403, map[string]any{"error_message": map[string]any{"faultstring": "policy"}}
	}})
	_, err := pdk.ListIronic(ctx.OpenStack("baremetal"), "v1/runbooks", "runbooks", nil, itemUUID)
	assert.True(t, pdk.IsRefused(err))
	assert.EqualError(t, err, "GET v1/runbooks: HTTP 403 Forbidden: policy")
}

func TestListRefusesAKeyThatIsNoPlainMemberName(t *testing.T) {
	ctx := pdktest.New(t, pdktest.Options{AllowAll: true})
	_, err := pdk.ListIronic(ctx.OpenStack("baremetal"), "v1/x", `a"b`, nil, itemUUID)
	require.ErrorContains(t, err, "cannot be a JSON member name")
}
