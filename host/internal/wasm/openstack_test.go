package wasm

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/pdk/abi"
	"github.com/openstack-sync/openstack-sync/pdk/abi/grant"
)

func TestResponseFraming(t *testing.T) {
	cases := []struct {
		name string
		resp plugin.Response
		want string
	}{
		{"JSON body follows the head as is", plugin.Response{StatusCode: 200,
			Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte("{\"a\":\n1}")},
			"{\"status\":200,\"headers\":{\"Content-Type\":[\"application/json\"]}}\n{\"a\":\n1}"},
		{"text body", plugin.Response{StatusCode: 503, Body: []byte("Service Unavailable")},
			"{\"status\":503,\"headers\":null}\nService Unavailable"},
		{"no body", plugin.Response{StatusCode: 204, Header: http.Header{}}, "{\"status\":204,\"headers\":{}}\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, string(encodeResponse(&c.resp)))
		})
	}
}

func errorKind(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	k, _ := e["kind"].(string)
	return k
}

// echoSession answers every request with the headers a careless server or a future Session might
// pass on.
type echoSession struct{ calls int }

func (s *echoSession) Do(context.Context, plugin.Request) (*plugin.Response, error) {
	s.calls++
	return &plugin.Response{StatusCode: 200, Header: http.Header{
		"X-Subject-Token": {"secret-token"}, "X-Auth-Token": {"secret-token"}, "X-Service-Token": {"secret-token"},
		"Set-Cookie": {"session=secret"}, "Content-Type": {"application/json"}}, Body: []byte(`{}`)}, nil
}

// The host's own check is the first line of defence, whatever the Session does: no credential
// header goes out from a plugin and none comes back to it.
func TestServeKeepsCredentialHeadersAwayFromThePlugin(t *testing.T) {
	log, _ := testLogger()
	p := &Plugin{
		grants: grant.NewSet([]grant.Grant{{Service: "network", Methods: []string{"*"}, Paths: []string{"**"}}}, nil)}
	request := func(header map[string][]string) (map[string]any, *echoSession) {
		s := &echoSession{}
		raw, err := json.Marshal(abi.OpenStackRequest{Service: "network", Method: "GET", Path: "v2.0/things", Headers: header})
		require.NoError(t, err)
		out := p.serve(context.Background(), &callInfo{entry: abi.EntryReconcile, session: s, log: log}, raw)
		head, _, _ := bytes.Cut(out, []byte("\n"))
		var m map[string]any
		require.NoError(t, json.Unmarshal(head, &m))
		return m, s
	}
	for _, h := range []string{"x-auth-token", "Proxy-Authorization", "X-Auth-Key", "X-OpenStack-Manila-API-Version",
		"Transfer-Encoding", "Connection", "X-Auth-Token ", "X-Ok\r\nX-Auth-Token", "X-HTTP-Method-Override",
		"X-Original-URL", "X-Rewrite-URL", "X-Forwarded-Host", "Forwarded", "X-Ok"} {
		m, s := request(map[string][]string{h: {"x"}})
		assert.Equal(t, "invalid_request", errorKind(m), "header %q", h)
		assert.Zero(t, s.calls, "header %q never reaches the Session", h)
	}
	m, s := request(map[string][]string{"If-Match": {"a\r\nX-Auth-Token: stolen"}})
	assert.Equal(t, "invalid_request", errorKind(m), "a value with a line break")
	assert.Zero(t, s.calls)

	m, _ = request(map[string][]string{"Accept": {"application/json"}})
	require.Nil(t, m["error"])
	assert.Equal(t, map[string]any{"Content-Type": []any{"application/json"}}, m["headers"],
		"credential headers of the response are removed")
}

// tooLargeSession answers as the real session does when a body passes plugin.MaxResponseBytes.
type tooLargeSession struct{}

func (tooLargeSession) Do(context.Context, plugin.Request) (*plugin.Response, error) {
	return nil, &plugin.TooLargeError{Op: "GET network v2.0/things", Size: plugin.MaxResponseBytes + 1, Limit: plugin.MaxResponseBytes}
}

// A response over the limit reaches the guest as kind too_large (the PDK's HostError.Kind), not
// as a session failure, and it is not permanent: a smaller request can work.
func TestOversizedResponseReachesTheGuestAsTooLarge(t *testing.T) {
	log, _ := testLogger()
	p := &Plugin{grants: grant.NewSet([]grant.Grant{{Service: "network", Methods: []string{"*"}, Paths: []string{"**"}}}, nil)}
	raw, err := json.Marshal(abi.OpenStackRequest{Service: "network", Method: "GET", Path: "v2.0/things"})
	require.NoError(t, err)
	ci := &callInfo{entry: abi.EntryReconcile, session: tooLargeSession{}, log: log}
	var m map[string]any
	require.NoError(t, json.Unmarshal(p.serve(context.Background(), ci, raw), &m))
	assert.Equal(t, "too_large", errorKind(m))
	assert.NotEqual(t, true, m["error"].(map[string]any)["permanent"])
	assert.Nil(t, ci.permanent, "an oversized answer does not fail the run as a permanent session error")
}
