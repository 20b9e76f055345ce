package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/pdktest"
)

// Each fault of Nautobot, of the token's Secret and of the URL a CR names is one line naming the
// cause, and nothing is written to Neutron from a spec that did not resolve. (Nautobot down and
// slow need the host's proxy: host/internal/pluginpass.)
func TestFaultsWriteNothing(t *testing.T) {
	answer := func(status int, body any) func(pdktest.SourceCall) (int, any, bool) {
		return func(pdktest.SourceCall) (int, any, bool) { return status, body, true }
	}
	link := "(" + nbURL + "/ipam/prefixes/" + publicID + "/)"
	cases := []struct {
		name      string
		change    func(w *world, s map[string]any)
		want      string
		reason    string
		permanent bool
	}{
		{"401 from a proxy in front of Nautobot", func(w *world, _ map[string]any) {
			w.nautobot.answer = answer(401, map[string]any{"detail": "Authentication credentials were not provided."})
		}, "Nautobot prefix lookup failed for id " + publicID + " " + link + ": HTTP 401 Unauthorized: Authentication credentials were not provided.", "", false},
		{"403 for a token Nautobot does not know", func(w *world, _ map[string]any) {
			w.nautobot.answer = answer(403, map[string]any{"detail": "Invalid token"})
		}, "Nautobot prefix lookup failed for id " + publicID + " " + link + ": HTTP 403 Forbidden: Invalid token", "", false},
		{"404: not Nautobot's API", func(w *world, _ map[string]any) {
			w.nautobot.answer = answer(404, []byte("<html>Page Not Found</html>"))
		}, "Nautobot prefix lookup failed for id " + publicID + " " + link + ": HTTP 404 Not Found (not Nautobot's JSON API: check spec.nautobot.url)", "", false},
		{"500", func(w *world, _ map[string]any) {
			w.nautobot.answer = answer(500, []byte("<h1>Server Error (500)</h1>"))
		}, "Nautobot prefix lookup failed for id " + publicID + " " + link + ": HTTP 500 Internal Server Error (a server error page, not an API answer)", "", false},
		{"a malformed answer", func(w *world, _ map[string]any) {
			w.nautobot.answer = answer(200, []byte(`{"count": 1, "results": [{"id": `))
		}, "Nautobot prefix lookup failed for id " + publicID + " " + link + ": the answer is not a Nautobot prefix list", "", false},
		{"a prefix record without its prefix", func(w *world, _ map[string]any) {
			w.nautobot.prefixes[0].Raw = map[string]any{"id": publicID}
		}, "Nautobot prefix record " + publicID + " has no prefix value", "InvalidSpec", false},
		{"the prefix is gone", func(w *world, _ map[string]any) { w.nautobot.prefixes = w.nautobot.prefixes[1:] },
			"Nautobot prefix " + publicID + " " + link + " was not found under location 'iad3-dev': it does not exist or is not associated with that location (spec.nautobot.require.location)",
			prefixMissingReason, false},
		{"a URL the operator does not allow-list", func(_ *world, s map[string]any) {
			nautobotSpec(s, map[string]any{"url": "https://nautobot.evil.example"})
		}, `spec.nautobot.url: source "nautobot": https://nautobot.evil.example is not an allow-listed URL of this source (allowed: ` + nbURL + ")", "InvalidSpec", true},
		{"the token's Secret key is missing", func(_ *world, s map[string]any) {
			nautobotSpec(s, map[string]any{"tokenSecretRef": map[string]any{"secretName": "nautobot-token", "key": "other"}})
		}, `spec.nautobot.tokenSecretRef: Secret nautobot-token has no key "other", or does not exist`, "InvalidSpec", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			s := spec(nil)
			c.change(w, s)
			_, err := w.reconcile(s)
			require.Error(t, err)
			assert.Equal(t, c.want, err.Error())
			assert.NotContains(t, err.Error(), "\n")
			assert.Equal(t, c.reason, pdk.Reason(err))
			assert.Equal(t, c.permanent, pdk.IsPermanent(err))
			assert.Empty(t, w.host().Calls(), "Neutron is not even read before the spec resolved")
		})
	}
}

// A second prefix failing after the first resolved still writes nothing.
func TestAHalfResolvedSpecWritesNothing(t *testing.T) {
	w := newWorld(t)
	w.nautobot.answer = func(c pdktest.SourceCall) (int, any, bool) {
		if c.Query.Get("id") == publicID2 {
			return 500, map[string]any{"detail": "boom"}, true
		}
		return 0, nil, false
	}
	_, err := w.reconcile(spec(nil))
	assert.EqualError(t, err, "Nautobot prefix lookup failed for id "+publicID2+" ("+nbURL+"/ipam/prefixes/"+publicID2+"/): HTTP 500 Internal Server Error: boom")
	assert.Len(t, w.host().SourceCalls(), 2)
	assert.Empty(t, w.host().Calls())
}
