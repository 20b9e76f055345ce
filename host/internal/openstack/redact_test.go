package openstack

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/fakecloud"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

// A server that echoes the request's token in its body (a debug endpoint, a misbehaving proxy)
// or returns another token never hands either to the plugin.
func TestResponseBodiesNeverCarryATokenToThePlugin(t *testing.T) {
	fernet := "gAAAAA" + strings.Repeat("Bx9_-k", 30) + "=="
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"seen":"` + r.Header.Get("X-Auth-Token") + `","other":"` + fernet + `","id":"gAAAAAshort"}`))
	}))
	defer echo.Close()
	h := newHarness(t, fakecloud.Options{}, Options{})
	u, err := joinEndpoint(echo.URL+"/", "v2.0/flavors", nil)
	require.NoError(t, err)
	p, err := prepare(plugin.Request{Service: "network", Method: http.MethodGet, Path: "v2.0/flavors"})
	require.NoError(t, err)
	resp, err := h.session.attempt(context.Background(), p, u, "own-uuid-token-0123456789")
	require.NoError(t, err)
	assert.Equal(t, `{"seen":"[redacted]","other":"[redacted]","id":"gAAAAAshort"}`, string(resp.Body),
		"the session's own token and Fernet-shaped tokens are replaced; a short lookalike is data")
}

// An oversized body is its own kind of failure, so the wasm host reports "too_large", not
// "session", and the plugin can ask for less.
func TestOversizedResponseIsTooLarge(t *testing.T) {
	h := newHarness(t, fakecloud.Options{}, Options{MaxResponseBytes: 64})
	_, err := h.session.Do(context.Background(), plugin.Request{Service: "network", Method: http.MethodGet, Path: "v2.0/network_segment_ranges"})
	require.Error(t, err)
	assert.True(t, plugin.IsTooLarge(err), "%v", err)
	assert.False(t, plugin.IsPermanent(err), "a smaller request can succeed")
}
