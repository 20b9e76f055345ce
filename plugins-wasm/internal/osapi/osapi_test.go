package osapi_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/osapi"
	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/osapi/osapitest"
)

func TestErrorMessage(t *testing.T) {
	raw, err := os.ReadFile("testdata/error-bodies.json")
	require.NoError(t, err)
	var cases []struct {
		Name string          `json:"name"`
		Body json.RawMessage `json:"body"`
		Want string          `json:"want"`
	}
	require.NoError(t, json.Unmarshal(raw, &cases))
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			body := []byte(tc.Body)
			var text string
			if json.Unmarshal(tc.Body, &text) == nil {
				body = []byte(text) // a non-JSON body, stored as a JSON string in the fixture
			}
			assert.Equal(t, tc.Want, osapi.ErrorMessage(body))
		})
	}
}

func TestHTTPErrorTextIsStable(t *testing.T) {
	err := osapi.NewHTTPError("DELETE", "v1/runbooks/u1", 409, []byte(`{"error_message": "{\"faultstring\": \"in use\"}"}`))
	assert.EqualError(t, err, "DELETE v1/runbooks/u1: HTTP 409 Conflict: in use")
	assert.True(t, osapi.IsConflict(fmt.Errorf("wrapped: %w", err)))
	assert.False(t, osapi.IsNotFound(err))
	assert.Equal(t, 0, osapi.StatusCode(fmt.Errorf("no status")))
	long := osapi.ErrorMessage([]byte(fmt.Sprintf(`{"NeutronError": {"message": "%0600d"}}`, 1)))
	assert.Len(t, long, 512, "messages are bounded so a status stays readable")
}

// pagedCloud serves n items in pages of size, with Neutron's "<key>_links" next link.
func pagedCloud(n, size int) osapitest.Handler {
	return func(r osapitest.Request) (int, any) {
		start := 0
		if m := r.Query.Get("marker"); m != "" {
			fmt.Sscanf(m, "id-%d", &start)
			start++
		}
		var items []any
		for i := start; i < n && len(items) < size; i++ {
			items = append(items, map[string]any{"id": fmt.Sprintf("id-%d", i)})
		}
		body := map[string]any{"things": items}
		if start+len(items) < n {
			body["things_links"] = []any{map[string]any{"rel": "next", "href": "http://x/v2.0/things?marker=" + fmt.Sprintf("id-%d", start+len(items)-1)}}
		}
		return 200, body
	}
}

func TestListNeutronFollowsNextLinks(t *testing.T) {
	svc := &osapitest.Service{Handle: pagedCloud(7, 3)}
	items, err := osapi.ListNeutron(svc, "v2.0/things", "things", url.Values{"fields": {"id"}})
	require.NoError(t, err)
	assert.Len(t, items, 7)
	assert.Equal(t, []string{
		"GET v2.0/things?fields=id&limit=100",
		"GET v2.0/things?fields=id&limit=100&marker=id-2",
		"GET v2.0/things?fields=id&limit=100&marker=id-5",
	}, svc.Lines())
}

func TestListNeutronStopsWhenPaginationDoesNotAdvance(t *testing.T) {
	svc := &osapitest.Service{Handle: func(osapitest.Request) (int, any) {
		return 200, map[string]any{"things": []any{map[string]any{"id": "same"}},
			"things_links": []any{map[string]any{"rel": "next", "href": "http://x"}}}
	}}
	_, err := osapi.ListNeutron(svc, "v2.0/things", "things", nil)
	require.ErrorContains(t, err, "pagination did not advance")
}
