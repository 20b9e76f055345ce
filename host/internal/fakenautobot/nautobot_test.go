package fakenautobot

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const key = "0123456789abcdef0123456789abcdef01234567"

func seeded(t *testing.T) *Server {
	s := New()
	t.Cleanup(s.Close)
	s.AddToken(Token{Key: key})
	s.AddToken(Token{Key: "expired-token-key", Expired: true})
	s.AddToken(Token{Key: "no-view-token-key", NoView: true})
	s.AddLocation(Location{Name: "iad"})
	s.AddLocation(Location{Name: "iad3-dev", Parent: "iad"})
	s.AddLocation(Location{Name: "dfw3"})
	s.AddPrefix(Prefix{ID: "2bc3ecab-b6dc-46cd-9bd4-1c0ea8a07f87", Prefix: "204.232.163.128/25", Type: "pool",
		Namespace: "Rackspace", Tags: []string{"openstack-subnet-pool"}, Locations: []string{"iad3-dev"}})
	s.AddPrefix(Prefix{ID: "53c8ee3b-09b9-41ab-a413-b1a1f5ecec6a", Prefix: "2001:db8::/48", Status: "Reserved", Locations: []string{"dfw3"}})
	s.AddPrefix(Prefix{ID: "6f0f2b8e-0d7e-4b7e-9d1a-9a2d8c4e1f00", Prefix: "10.4.88.0/24", Locations: []string{"iad3-dev", "dfw3"}})
	return s
}

type answer struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func get(t *testing.T, s *Server, path, token, accept string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.URL()+path, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Token "+token)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	_ = json.Unmarshal(raw, &a.body)
	return a
}

// Nautobot's answers, as its source (v3.1.6) gives them.
func TestNautobotAnswers(t *testing.T) {
	s := seeded(t)
	v20 := "application/json; version=2.0"
	cases := []struct {
		name, path, token, accept string
		status                    int
		body                      string
	}{
		{"no token", "/api/ipam/prefixes/", "", "", 403, `{"detail":"Authentication credentials were not provided."}`},
		{"unknown token", "/api/ipam/prefixes/", "not-a-known-token", "", 403, `{"detail":"Invalid token"}`},
		{"expired token", "/api/ipam/prefixes/", "expired-token-key", "", 403, `{"detail":"Token expired"}`},
		{"a token that may not view prefixes", "/api/ipam/prefixes/", "no-view-token-key", "", 403,
			`{"detail":"You do not have permission to perform this action."}`},
		{"an unknown version", "/api/ipam/prefixes/", key, "application/json; version=1.3", 406,
			`{"detail":"Invalid version \"1.3\" in \"Accept\" header. Supported versions are: 2.0, 2.1, 2.2, 2.3, 2.4, 3.0, 3.1"}`},
		{"an unknown location", "/api/ipam/prefixes/?id=2bc3ecab-b6dc-46cd-9bd4-1c0ea8a07f87&location=iad3", key, v20, 400,
			`{"location":["Select a valid choice. iad3 is not one of the available choices."]}`},
		{"an unknown filter", "/api/ipam/prefixes/?site=iad3-dev", key, v20, 400, `{"site":["Unknown filter field"]}`},
		{"a malformed id", "/api/ipam/prefixes/?id=prefix-7", key, v20, 400, `{"id":["“prefix-7” is not a valid UUID."]}`},
		{"an unknown prefix by id", "/api/ipam/prefixes/11111111-2222-4333-8444-555555555555/", key, v20, 404, `{"detail":"Not found."}`},
		{"no prefix of that id under that location", "/api/ipam/prefixes/?id=53c8ee3b-09b9-41ab-a413-b1a1f5ecec6a&location=iad3-dev",
			key, v20, 200, `{"count":0,"next":null,"previous":null,"results":[]}`},
		{"several locations cannot be shown at 2.0", "/api/ipam/prefixes/?id=6f0f2b8e-0d7e-4b7e-9d1a-9a2d8c4e1f00", key, v20, 412,
			`{"detail":"This object has multiple Locations and so cannot be represented in the 2.0 or 2.1 REST API. Please correct the data or use a later API version."}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := get(t, s, c.path, c.token, c.accept)
			assert.Equal(t, c.status, a.status)
			assert.JSONEq(t, c.body, a.raw)
		})
	}
}

func TestPrefixShapesAtEachDepthAndVersion(t *testing.T) {
	s := seeded(t)
	a := get(t, s, "/api/ipam/prefixes/?id=2bc3ecab-b6dc-46cd-9bd4-1c0ea8a07f87&location=iad", key, "application/json; version=2.0")
	require.Equal(t, 200, a.status, a.raw)
	assert.Equal(t, "2.0", a.header.Get("API-Version"))
	require.EqualValues(t, 1, a.body["count"], "a location filter takes its descendants")
	p := a.body["results"].([]any)[0].(map[string]any)
	assert.Equal(t, "204.232.163.128/25", p["prefix"])
	assert.Equal(t, map[string]any{"value": "pool", "label": "Pool"}, p["type"])
	assert.Equal(t, []string{"id", "object_type", "url"}, keys(p["status"]), "depth 0 names a related object only")
	assert.Contains(t, p, "location")
	assert.NotContains(t, p, "locations")

	a = get(t, s, "/api/ipam/prefixes/2bc3ecab-b6dc-46cd-9bd4-1c0ea8a07f87/?depth=1", key, "application/json; version=3.1")
	require.Equal(t, 200, a.status, a.raw)
	assert.Equal(t, "Active", a.body["status"].(map[string]any)["name"])
	assert.Equal(t, "Rackspace", a.body["namespace"].(map[string]any)["name"])
	assert.Equal(t, "openstack-subnet-pool", a.body["tags"].([]any)[0].(map[string]any)["name"])
	assert.Equal(t, "iad3-dev", a.body["locations"].([]any)[0].(map[string]any)["name"])
	assert.Equal(t, "204.232.163.255", a.body["broadcast"])
	assert.EqualValues(t, 4, a.body["ip_version"])
	assert.Equal(t, "3.1", a.header.Get("API-Version"))
	assert.Equal(t, "3.1", get(t, s, "/api/status/", key, "").header.Get("API-Version"), "the newest version by default")
}

func keys(v any) []string {
	var out []string
	for k := range v.(map[string]any) {
		out = append(out, k)
	}
	slicesSort(out)
	return out
}

func slicesSort(s []string) {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
}

func TestPaginationAndRedirect(t *testing.T) {
	s := seeded(t)
	a := get(t, s, "/api/ipam/prefixes/?limit=2", key, "")
	require.Equal(t, 200, a.status)
	assert.EqualValues(t, 3, a.body["count"])
	assert.Len(t, a.body["results"], 2)
	next := a.body["next"].(string)
	assert.True(t, strings.HasPrefix(next, s.URL()+"/api/ipam/prefixes/?"), "next links are absolute")
	a = get(t, s, strings.TrimPrefix(next, s.URL()), key, "")
	assert.Len(t, a.body["results"], 1)
	assert.Nil(t, a.body["next"])
	assert.NotNil(t, a.body["previous"])

	a = get(t, s, "/api/ipam/prefixes?id=2bc3ecab-b6dc-46cd-9bd4-1c0ea8a07f87", key, "")
	assert.Equal(t, 301, a.status, "Django's APPEND_SLASH")
	assert.Equal(t, "/api/ipam/prefixes/?id=2bc3ecab-b6dc-46cd-9bd4-1c0ea8a07f87", a.header.Get("Location"))
	assert.Equal(t, 404, get(t, s, "/api/users/tokens/", key, "").status)
}

func TestFaults(t *testing.T) {
	s := seeded(t)
	s.SetFault(Fault{Path: "/api/ipam/", Count: 1, Status: 503, RetryAfter: "2", Body: `{"detail":"busy"}`})
	a := get(t, s, "/api/ipam/prefixes/", key, "")
	assert.Equal(t, 503, a.status)
	assert.Equal(t, "2", a.header.Get("Retry-After"))
	assert.Equal(t, 200, get(t, s, "/api/ipam/prefixes/", key, "").status, "the fault was spent")
	s.SetFault(Fault{Malformed: true, Count: 1})
	assert.False(t, json.Valid([]byte(get(t, s, "/api/ipam/prefixes/", key, "").raw)))
	assert.Equal(t, key, s.Requests()[0].Token)
}
