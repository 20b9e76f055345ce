package pdk_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/pdktest"
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
			assert.Equal(t, tc.Want, pdk.ErrorMessage(body))
		})
	}
}

func TestErrorMessageIsBounded(t *testing.T) {
	long := pdk.ErrorMessage(fmt.Appendf(nil, `{"NeutronError": {"message": "%0600d"}}`, 1))
	assert.Len(t, long, 512, "messages are bounded so a status stays readable")
	assert.True(t, strings.HasSuffix(long, "..."))
	wide := pdk.ErrorMessage([]byte(strings.Repeat("é", 400)))
	assert.LessOrEqual(t, len(wide), 512)
	assert.True(t, strings.HasSuffix(wide, "é..."), "a cut never splits a character")
}

func TestHTTPErrorHelpers(t *testing.T) {
	cases := []struct {
		status                      int
		text                        string
		notFound, conflict, refused bool
	}{
		{400, "DELETE v1/runbooks/u1: HTTP 400 Bad Request: in use", false, false, false},
		{401, "DELETE v1/runbooks/u1: HTTP 401 Unauthorized: in use", false, false, true},
		{403, "DELETE v1/runbooks/u1: HTTP 403 Forbidden: in use", false, false, true},
		{404, "DELETE v1/runbooks/u1: HTTP 404 Not Found: in use", true, false, false},
		{409, "DELETE v1/runbooks/u1: HTTP 409 Conflict: in use", false, true, false},
		{418, "DELETE v1/runbooks/u1: HTTP 418: in use", false, false, false},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			err := fmt.Errorf("wrapped: %w", pdk.NewHTTPError("baremetal", "DELETE", "v1/runbooks/u1", tc.status,
				[]byte(`{"error_message": "{\"faultstring\": \"in use\"}"}`)))
			assert.EqualError(t, errors.Unwrap(err), tc.text)
			assert.Equal(t, tc.status, pdk.StatusCode(err))
			assert.Equal(t, tc.notFound, pdk.IsNotFound(err))
			assert.Equal(t, tc.conflict, pdk.IsConflict(err))
			assert.Equal(t, tc.refused, pdk.IsRefused(err))
		})
	}
	assert.Equal(t, 0, pdk.StatusCode(errors.New("no status")))
	assert.EqualError(t, pdk.NewHTTPError("network", "GET", "v2.0/x", 503, nil), "GET v2.0/x: HTTP 503 Service Unavailable")
}

func TestCallEncodesDecodesAndWrapsHostErrors(t *testing.T) {
	ctx := pdktest.New(t, pdktest.Options{AllowAll: true, Cloud: func(c pdktest.Call) (int, any) {
		switch c.Method + " " + c.Path {
		case "POST v2.0/flavors":
			return 201, json.RawMessage(`{"flavor":{"id":"f1"}}`)
		case "GET v2.0/bad":
			return 200, []byte("not json")
		case "HEAD v3/auth/tokens":
			return 204, nil
		}
		return 404, map[string]any{"NeutronError": map[string]any{"message": "no " + c.Path}}
	}})
	net := ctx.OpenStack("network")
	assert.Equal(t, "network", net.Service())

	var out struct {
		Flavor struct{ ID string } `json:"flavor"`
	}
	require.NoError(t, net.Post("v2.0/flavors", map[string]any{"flavor": map[string]any{"name": "a"}}, &out))
	assert.Equal(t, "f1", out.Flavor.ID)

	err := net.Get("v2.0/missing", url.Values{"name": {"x"}}, nil)
	assert.EqualError(t, err, "GET v2.0/missing: HTTP 404 Not Found: no v2.0/missing")
	var he *pdk.HTTPError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, "network", he.Service)

	assert.ErrorContains(t, net.Get("v2.0/bad", nil, &out), "GET v2.0/bad: unreadable answer")
	require.NoError(t, ctx.OpenStack("identity").Head("v3/auth/tokens", nil))

	calls := pdktest.Of(t, ctx).Calls()
	require.Len(t, calls, 4)
	assert.Equal(t, `{"flavor":{"name":"a"}}`, string(calls[0].Body))
	assert.Equal(t, "GET v2.0/missing?name=x", calls[1].String())

	denied := pdktest.New(t, pdktest.Options{Grants: []pdk.Grant{{Service: "network", Methods: []string{"GET"}, Paths: []string{"v2.0/a"}}}})
	err = denied.OpenStack("network").Delete("v2.0/a", nil, nil)
	var host *pdk.HostError
	require.ErrorAs(t, err, &host, "a refusal by the host keeps its type under the method and path")
	assert.True(t, pdk.IsPermanent(err))
	assert.EqualError(t, err, "DELETE network v2.0/a: method DELETE is not one the plugin declares for this path (GET)",
		"the host's words already name the call: not wrapped again")

	noSession := pdktest.New(t, pdktest.Options{AllowAll: true, Script: []pdktest.Exchange{
		{Err: &pdk.HostError{Kind: "invalid_request", Message: "openstack_request: no OpenStack session during prune", IsPermanent: true}}}})
	err = noSession.OpenStack("network").Get("v2.0/a", nil, nil)
	assert.EqualError(t, err, "GET v2.0/a: openstack_request: no OpenStack session during prune", "other host errors gain the call")
	require.ErrorAs(t, err, &host)
}
