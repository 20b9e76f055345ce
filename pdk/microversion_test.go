package pdk_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/pdktest"
)

func TestNegotiateMicroversion(t *testing.T) {
	oldest, newest := pdk.APIVersion{Major: 1, Minor: 92}, pdk.APIVersion{Major: 1, Minor: 112}
	root := func(max string) map[string]any {
		return map[string]any{"versions": []any{map[string]any{"id": "v1", "status": "CURRENT", "version": max, "min_version": "1.1"}},
			"default_version": map[string]any{"id": "v1", "version": max}}
	}
	cases := []struct {
		name string
		doc  any
		want string
		err  string
	}{
		{name: "the maximum offered", doc: root("1.96"), want: "1.96"},
		{name: "exactly the newest known", doc: root("1.112"), want: "1.112"},
		{name: "capped at the newest known", doc: root("1.130"), want: "1.112"},
		{name: "exactly the oldest usable", doc: root("1.92"), want: "1.92"},
		{name: "the versioned document", doc: map[string]any{"id": "v1", "version": map[string]any{"id": "v1", "version": "1.99"}}, want: "1.99"},
		{name: "default version only", doc: map[string]any{"default_version": map[string]any{"id": "v1", "version": "1.100"}}, want: "1.100"},
		{name: "too old", doc: root("1.91"), err: "Ironic supports API microversion 1.91 but this plugin requires 1.92; upgrade Ironic"},
		{name: "latest", doc: root("latest"), err: "Ironic reported an unusable API microversion 'latest'"},
		{name: "unreadable", doc: root("one.two"), err: `Ironic reported an unreadable API microversion "one.two"`},
		{name: "none", doc: map[string]any{"versions": []any{}}, err: "Could not determine the Ironic API microversion: the version document names no v1 maximum"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cache := map[string]any{}
			ctx := pdktest.New(t, pdktest.Options{AllowAll: true, Cache: cache,
				Cloud: func(pdktest.Call) (int, any) { return 200, tc.doc }})
			c := ctx.OpenStack("baremetal").Microversion("1.1")
			v, err := c.NegotiateMicroversion("v1", oldest, newest)
			h := pdktest.Of(t, ctx)
			require.Len(t, h.Calls(), 1)
			assert.Equal(t, "/", h.Calls()[0].Path)
			assert.Empty(t, h.Calls()[0].Microversion, "the root document is unversioned")
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				var me *pdk.MicroversionError
				require.ErrorAs(t, err, &me)
				assert.True(t, pdk.IsPermanent(err), "a version the plugin cannot use is not waited for")
				assert.Equal(t, oldest, me.Required)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, v.String())
			// The group cache keeps the answer: a second negotiation sends nothing.
			again, err := c.NegotiateMicroversion("v1", oldest, newest)
			require.NoError(t, err)
			assert.Equal(t, v, again)
			assert.Len(t, h.Calls(), 1)
		})
	}
}

func TestNegotiateMicroversionKeepsTransportErrorsRetryable(t *testing.T) {
	ctx := pdktest.New(t, pdktest.Options{AllowAll: true, Cloud: func(pdktest.Call) (int, any) { return 503, []byte("down") }})
	_, err := ctx.OpenStack("baremetal").NegotiateMicroversion("v1", pdk.APIVersion{Major: 1, Minor: 1}, pdk.APIVersion{Major: 1, Minor: 2})
	require.EqualError(t, err, "read the Ironic version document: GET /: HTTP 503 Service Unavailable: down")
	assert.False(t, pdk.IsPermanent(err))
}

func TestParseAPIVersion(t *testing.T) {
	for in, want := range map[string]string{"1.92": "1.92", "2.0": "2.0", "1.": "", "latest": "", "0.1": "", "1.-1": "", "x.y": ""} {
		v, err := pdk.ParseAPIVersion(in)
		if want == "" {
			assert.Error(t, err, in)
			continue
		}
		require.NoError(t, err, in)
		assert.Equal(t, want, v.String())
	}
	assert.True(t, pdk.APIVersion{Major: 1, Minor: 9}.Less(pdk.APIVersion{Major: 1, Minor: 10}))
	assert.False(t, pdk.APIVersion{Major: 2}.Less(pdk.APIVersion{Major: 1, Minor: 99}))
}
