package pdktest_test

import (
	"net/url"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/experimental"
	"github.com/openstack-sync/openstack-sync/pdk/experimental/bench"
	"github.com/openstack-sync/openstack-sync/pdk/experimental/memotest"
	"github.com/openstack-sync/openstack-sync/pdk/pdktest"
)

func TestScriptAnswersInOrderAndRecords(t *testing.T) {
	ctx := pdktest.New(t, pdktest.Options{
		AllowAll: true, // independent of what another test registered
		Config:   map[string]string{"REGION": "r1"},
		Script: []pdktest.Exchange{
			{Method: "GET", Service: "network", Path: "v2.0/flavors", Body: map[string]any{"flavors": []any{}}},
			{Method: "POST", Service: "network", Path: "v2.0/flavors", Status: 409, Body: map[string]any{"NeutronError": map[string]string{"message": "dup"}}},
		},
	})
	var list struct{ Flavors []any }
	require.NoError(t, ctx.OpenStack("network").Get("v2.0/flavors", nil, &list))
	err := ctx.OpenStack("network").Post("v2.0/flavors", map[string]string{"name": "a"}, nil)
	assert.True(t, pdk.IsConflict(err))
	ctx.Logf(pdk.LevelInfo, "region %s", "r1")

	v, ok := ctx.Config("REGION")
	assert.True(t, ok)
	assert.Equal(t, "r1", v)
	_, ok = ctx.Config("HOME")
	assert.False(t, ok)

	h := pdktest.Of(t, ctx)
	reqs := h.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, "POST", reqs[1].Method)
	assert.Equal(t, []pdktest.LogLine{{Level: pdk.LevelInfo, Message: "region r1"}}, h.Logs())
}

func TestGrantsAreEnforcedLikeTheHost(t *testing.T) {
	ctx := pdktest.New(t, pdktest.Options{
		Grants: []pdk.Grant{{Service: "network", Methods: []string{"GET"}, Paths: []string{"v2.0/flavors"}}},
		Handler: func(req *pdk.Request) (*pdk.Response, error) {
			return pdktest.JSON(200, map[string]any{}), nil
		},
	})
	require.NoError(t, ctx.OpenStack("network").Get("v2.0/flavors", nil, nil))
	err := ctx.OpenStack("network").Delete("v2.0/flavors/x", nil, nil)
	var he *pdk.HostError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, "grant_denied", he.Kind)
	assert.True(t, pdk.IsPermanent(err))
}

var registerOnce sync.Once

func TestRegisteredGrantsAreEnforcedByDefault(t *testing.T) {
	registerOnce.Do(func() { pdk.Register(testPlugin) })
	answer := func(*pdk.Request) (*pdk.Response, error) { return pdktest.JSON(200, nil), nil }

	ctx := pdktest.New(t, pdktest.Options{Handler: answer})
	require.NoError(t, ctx.OpenStack("network").Get("v2.0/things", nil, nil))
	err := ctx.OpenStack("network").Post("v2.0/things", map[string]string{}, nil)
	assert.True(t, pdk.IsPermanent(err), "an undeclared call fails like on the real host")

	ctx = pdktest.New(t, pdktest.Options{Handler: answer, AllowAll: true})
	assert.NoError(t, ctx.OpenStack("network").Post("v2.0/things", map[string]string{}, nil))
}

var testPlugin = pdk.Plugin{
	Metadata: pdk.Metadata{Name: "t", EnvPrefix: "T",
		Grants: []pdk.Grant{{Service: "network", Methods: []string{"GET"}, Paths: []string{"v2.0/things", "v2.0/things/*"}},
			{Service: "network", Methods: []string{"PUT"}, Paths: []string{"v2.0/things/*"}}}},
	WaitForAPI: func(*pdk.Context) error { return nil },
	Reconcile:  memoReconcile,
}

// memoReconcile reads the thing spec.name names, asks the memo with its JSON and, on a miss,
// writes it when spec.write is set and notes that it reconciled in full.
func memoReconcile(ctx *pdk.Context, req *pdk.ReconcileRequest) (*pdk.Result, error) {
	var s struct {
		Name  string `json:"name"`
		Write bool   `json:"write"`
	}
	if err := req.DecodeSpec(&s); err != nil || s.Name == "" {
		return nil, err
	}
	things := ctx.OpenStack("network")
	resp, err := things.Do(pdk.Request{Method: "GET", Path: "v2.0/things/" + s.Name})
	if err != nil {
		return nil, err
	}
	if experimental.Unchanged(ctx, resp.Body) {
		return experimental.Recorded(), nil
	}
	if s.Write {
		if err := things.Put("v2.0/things/"+s.Name, map[string]string{}, nil); err != nil {
			return nil, err
		}
	}
	return &pdk.Result{Notes: []string{"full " + string(resp.Body)}}, nil
}

// A Replay with Memo plays the host's convergence memo for ReconcileInput: a write-free
// reconcile is recorded and answered with its notes the next time, a write records nothing, and
// changed evidence or input misses.
func TestReplayMemo(t *testing.T) {
	registerOnce.Do(func() { pdk.Register(testPlugin) })
	h := &bench.Replay{Memo: true, Bodies: map[string][]byte{
		"GET v2.0/things/a": []byte(`{"thing":"a1"}`), "GET v2.0/things/w": []byte(`{"thing":"w"}`), "PUT v2.0/things/w": []byte(`{}`)}}
	in := func(spec string) []byte {
		return []byte(`{"abi_version":1,"object":{"kind":"T","name":"x","uid":"u"},"spec":` + spec + `}`)
	}
	cache := map[string]any{}
	notes, err := bench.ReconcileInput(h, cache, in(`{"name":"a"}`))
	require.NoError(t, err)
	assert.Equal(t, []string{`full {"thing":"a1"}`}, notes)
	notes, err = bench.ReconcileInput(h, cache, in(`{"name":"a"}`))
	require.NoError(t, err)
	assert.Equal(t, []string{`full {"thing":"a1"}`}, notes, "the recorded notes")

	h.Bodies["GET v2.0/things/a"] = []byte(`{"thing":"a2"}`)
	notes, err = bench.ReconcileInput(h, cache, in(`{"name":"a"}`))
	require.NoError(t, err)
	assert.Equal(t, []string{`full {"thing":"a2"}`}, notes, "changed evidence misses")

	for range 2 {
		notes, err = bench.ReconcileInput(h, cache, in(`{"name":"w","write":true}`))
		require.NoError(t, err)
		assert.Equal(t, []string{`full {"thing":"w"}`}, notes, "a reconcile that writes is never recorded")
	}

	plain := &bench.Replay{Bodies: h.Bodies}
	for range 2 {
		notes, err = bench.ReconcileInput(plain, cache, in(`{"name":"a"}`))
		require.NoError(t, err)
		assert.Equal(t, []string{`full {"thing":"a2"}`}, notes, "without Memo nothing is recorded")
	}
}

// A Host passes each Unchanged call's evidence to the answer memotest gave it and keeps it.
func TestHostUnchanged(t *testing.T) {
	ctx := pdktest.New(t, pdktest.Options{AllowAll: true})
	memotest.Answer(pdktest.Of(t, ctx), func(ev [][]byte) bool { return string(ev[0]) == "same" })
	assert.True(t, experimental.Unchanged(ctx, []byte("same")))
	assert.False(t, experimental.Unchanged(ctx, []byte("other"), []byte("x")))
	assert.Equal(t, [][][]byte{{[]byte("same")}, {[]byte("other"), []byte("x")}}, pdktest.Of(t, ctx).Evidence())
	assert.False(t, experimental.Unchanged(pdktest.New(t, pdktest.Options{AllowAll: true}), []byte("same")), "no answer, no hit")
}

// A paginated list replays page by page: a body keyed by path and query wins over the path's.
func TestReplayAnswersPagesByQuery(t *testing.T) {
	h := &bench.Replay{Bodies: map[string][]byte{
		"GET v1/things":                              []byte(`{"things":[]}`),
		"GET v1/things?limit=2&marker=b":             []byte(`{"things":[{"uuid":"c"}]}`),
		"GET v1/things?detail=true&limit=2&marker=b": []byte(`{"things":[{"uuid":"d"}]}`),
	}}
	for _, tc := range []struct {
		query url.Values
		want  string
	}{
		{nil, `{"things":[]}`},
		{url.Values{"marker": {"b"}, "limit": {"2"}}, `{"things":[{"uuid":"c"}]}`},
		{url.Values{"marker": {"b"}, "limit": {"2"}, "detail": {"true"}}, `{"things":[{"uuid":"d"}]}`},
		{url.Values{"marker": {"x"}}, `{"things":[]}`},
	} {
		resp, err := h.OpenStack(&pdk.Request{Method: "GET", Path: "v1/things", Query: tc.query})
		require.NoError(t, err)
		assert.Equal(t, tc.want, string(resp.Body), "query %v", tc.query)
	}
	assert.Equal(t, 4, h.Requests)
}

// The fake host plays an allow-listed source as the real one does: the allowed URL only, the
// credential from the named Secret key added by the host and scrubbed from the answer, the
// host's refusal kinds otherwise.
func TestSourcesAreServedLikeTheHost(t *testing.T) {
	const cred = "abcdef0123456789"
	ctx := pdktest.New(t, pdktest.Options{AllowAll: true, Sources: []pdktest.Source{{
		Name: "nautobot", URL: "https://nautobot.example/", Secrets: map[string]string{"nb/token": cred + "\n"},
		Server: func(c pdktest.SourceCall) (int, any) {
			return 200, map[string]any{"echo": c.Header["Authorization"], "path": c.Path}
		},
	}}})
	var out map[string]any
	nb := ctx.Source("nautobot", "HTTPS://nautobot.example").WithSecret("nb", "token")
	require.NoError(t, nb.Get("api/status/", nil, &out))
	assert.Equal(t, []any{"Token [redacted]"}, out["echo"])
	calls := pdktest.Of(t, ctx).SourceCalls()
	require.Len(t, calls, 1)
	assert.Equal(t, []string{"Token " + cred}, calls[0].Header["Authorization"], "the server sees the credential")

	kind := func(err error) string {
		var he *pdk.HostError
		require.ErrorAs(t, err, &he)
		return he.Kind
	}
	assert.Equal(t, "source_denied", kind(ctx.Source("nautobot", "https://evil.example").Get("api/", nil, nil)))
	assert.Equal(t, "source_denied", kind(ctx.Source("netbox", "https://nautobot.example").Get("api/", nil, nil)))
	assert.Equal(t, "secret", kind(ctx.Source("nautobot", "https://nautobot.example").WithSecret("nb", "other").Get("api/", nil, nil)))
	assert.Equal(t, "invalid_request", kind(nb.Get("api//", nil, nil)))
	assert.Len(t, pdktest.Of(t, ctx).SourceCalls(), 1, "no refused request reached the server")

	strict := pdktest.New(t, pdktest.Options{Sources: []pdktest.Source{{Name: "nautobot", URL: "https://nautobot.example"}}})
	assert.Equal(t, "grant_denied", kind(strict.Source("nautobot", "https://nautobot.example").Get("api/", nil, nil)),
		"without a registered plugin nothing is declared")
}
