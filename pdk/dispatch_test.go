package pdk

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/pdk/abi"
)

type recordingHost struct {
	config   map[string]string
	requests []*Request
	answer   func(*Request) (*Response, error)
}

func (h *recordingHost) Config(k string) (string, bool) { v, ok := h.config[k]; return v, ok }
func (h *recordingHost) Log(LogLevel, string)           {}
func (h *recordingHost) OpenStack(r *Request) (*Response, error) {
	h.requests = append(h.requests, r)
	return h.answer(r)
}

type spec struct {
	Name string `json:"name"`
}

// withoutPlugin empties the registry for the test, restoring it afterwards, since Register refuses
// a second registration.
func withoutPlugin(t *testing.T) {
	old := registered
	registered = nil
	t.Cleanup(func() { registered = old })
}

func withPlugin(t *testing.T, p Plugin) {
	t.Helper()
	withoutPlugin(t)
	Register(p)
}

func TestDispatchReconcileUsesGroupCacheAndReturnsResult(t *testing.T) {
	var seen []int
	withPlugin(t, Plugin{
		Metadata:   Metadata{Name: "x", EnvPrefix: "X"},
		WaitForAPI: func(*Context) error { return nil },
		Reconcile: func(ctx *Context, req *ReconcileRequest) (*Result, error) {
			var s spec
			if err := req.DecodeSpec(&s); err != nil {
				return nil, err
			}
			n, _ := ctx.Cache()["n"].(int)
			ctx.Cache()["n"] = n + 1
			seen = append(seen, n)
			return &Result{Notes: []string{"hello " + s.Name + " " + req.Object.Name}}, nil
		},
	})
	var in instance
	h := &recordingHost{}
	input := `{"abi_version":1,"object":{"kind":"K","namespace":"ns","name":"cr"},"spec":{"name":"a"}}`
	_, werr := in.dispatch(abi.EntryGroupBegin, []byte(`{"abi_version":1}`), h)
	require.Nil(t, werr)
	for range 2 {
		out, werr := in.dispatch(abi.EntryReconcile, []byte(input), h)
		require.Nil(t, werr)
		assert.JSONEq(t, `{"notes":["hello a cr"]}`, string(out))
	}
	_, werr = in.dispatch(abi.EntryGroupEnd, []byte(`{"abi_version":1}`), h)
	require.Nil(t, werr)
	_, werr = in.dispatch(abi.EntryGroupBegin, []byte(`{"abi_version":1}`), h)
	require.Nil(t, werr)
	_, werr = in.dispatch(abi.EntryReconcile, []byte(input), h)
	require.Nil(t, werr)
	assert.Equal(t, []int{0, 1, 0}, seen, "the cache is shared within a group and never across groups")
}

// A plugin that declared SkipStatus never sees a status, even from a host that sends one, and
// one that did not sees it.
func TestDispatchSkipStatus(t *testing.T) {
	input := []byte(`{"abi_version":1,"object":{"kind":"K","name":"cr"},"spec":{},"status":{"id":"r1"}}`)
	for _, skip := range []bool{false, true} {
		var got map[string]any
		withPlugin(t, Plugin{
			Metadata:   Metadata{Name: "x", EnvPrefix: "X", skipStatus: skip},
			WaitForAPI: func(*Context) error { return nil },
			Reconcile: func(_ *Context, req *ReconcileRequest) (*Result, error) {
				got = req.Status
				return nil, nil
			},
		})
		var in instance
		_, werr := in.dispatch(abi.EntryReconcile, input, &recordingHost{})
		require.Nil(t, werr)
		if skip {
			assert.Nil(t, got)
		} else {
			assert.Equal(t, map[string]any{"id": "r1"}, got)
		}
		out, werr := in.dispatch(abi.EntryMetadata, nil, &recordingHost{})
		require.Nil(t, werr)
		assert.Equal(t, skip, strings.Contains(string(out), `"skip_status":true`), "%s", out)
	}
}

func TestDispatchErrorsCarryReasonAndPermanence(t *testing.T) {
	withPlugin(t, Plugin{
		Metadata:   Metadata{Name: "x", EnvPrefix: "X"},
		WaitForAPI: func(*Context) error { return Permanent(errors.New("API too old")) },
		Reconcile: func(*Context, *ReconcileRequest) (*Result, error) {
			return nil, WithReason("FlavorConflict", errors.New("flavor is in use"))
		},
	})
	var in instance
	_, werr := in.dispatch(abi.EntryWaitForAPI, []byte(`{"abi_version":1}`), &recordingHost{})
	require.NotNil(t, werr)
	assert.Equal(t, "API too old", werr.Message)
	assert.True(t, werr.Permanent)

	_, werr = in.dispatch(abi.EntryReconcile, []byte(`{"abi_version":1,"spec":{}}`), &recordingHost{})
	require.NotNil(t, werr)
	assert.Equal(t, "FlavorConflict", werr.Reason)
	assert.False(t, werr.Permanent)

	_, werr = in.dispatch(abi.EntryReconcile, []byte(`{"abi_version":2,"spec":{}}`), &recordingHost{})
	require.NotNil(t, werr)
	assert.Contains(t, werr.Message, "host speaks ABI version 2")
}

func TestDispatchMetadataAndPruneDecode(t *testing.T) {
	var got []spec
	var authoritative bool
	withPlugin(t, Plugin{
		Metadata: Metadata{Name: "x", EnvPrefix: "X",
			Grants:  []Grant{{Service: "network", Methods: []string{"GET"}, Paths: []string{"v2.0/a"}}},
			Cleanup: Cleanup{WhenNoPrune: CleanupBestEffortPrune}},
		WaitForAPI: func(*Context) error { return nil },
		Reconcile:  func(*Context, *ReconcileRequest) (*Result, error) { return nil, nil },
		Prune: func(_ *Context, req *PruneRequest) error {
			authoritative = req.AuthoritativeEmpty
			return req.DecodeSpecs(&got)
		},
	})
	var in instance
	out, werr := in.dispatch(abi.EntryMetadata, nil, &recordingHost{})
	require.Nil(t, werr)
	assert.JSONEq(t, `{"abi_version":1,"name":"x","noun":"","env_prefix":"X","binding_name":"","has_prune":true,
		"grants":[{"service":"network","methods":["GET"],"paths":["v2.0/a"]}],"cleanup":{"when_no_prune":"BEST_EFFORT_PRUNE"}}`, string(out))
	_, werr = in.dispatch(abi.EntryPrune, []byte(`{"abi_version":1,"desired_specs":[{"name":"a"},{"name":"b"}],"authoritative_empty":true}`), &recordingHost{})
	require.Nil(t, werr)
	assert.Equal(t, []spec{{"a"}, {"b"}}, got)
	assert.True(t, authoritative)
}

func TestRegisterRefusesInvalidPlugins(t *testing.T) {
	ok := func(*Context) error { return nil }
	rec := func(*Context, *ReconcileRequest) (*Result, error) { return nil, nil }
	cases := map[string]Plugin{
		"no name":            {Metadata: Metadata{EnvPrefix: "X"}, WaitForAPI: ok, Reconcile: rec},
		"no prefix":          {Metadata: Metadata{Name: "x"}, WaitForAPI: ok, Reconcile: rec},
		"no reconcile":       {Metadata: Metadata{Name: "x", EnvPrefix: "X"}, WaitForAPI: ok},
		"has prune, no func": {Metadata: Metadata{Name: "x", EnvPrefix: "X", HasPrune: true}, WaitForAPI: ok, Reconcile: rec},
		"prune policy without prune": {Metadata: Metadata{Name: "x", EnvPrefix: "X",
			Cleanup: Cleanup{WhenPrune: CleanupFinalizedPrune}}, WaitForAPI: ok, Reconcile: rec},
		"unknown policy": {Metadata: Metadata{Name: "x", EnvPrefix: "X", Cleanup: Cleanup{WhenPrune: "SOMETIMES"}},
			WaitForAPI: ok, Reconcile: rec},
		"empty grant": {Metadata: Metadata{Name: "x", EnvPrefix: "X", Grants: []Grant{{Service: "network"}}},
			WaitForAPI: ok, Reconcile: rec},
		"has remark, no func":      {Metadata: Metadata{Name: "x", EnvPrefix: "X", HasRemark: true}, WaitForAPI: ok, Reconcile: rec},
		"has delete, no func":      {Metadata: Metadata{Name: "x", EnvPrefix: "X", HasDelete: true, Lifecycle: true}, WaitForAPI: ok, Reconcile: rec},
		"delete without lifecycle": {Metadata: Metadata{Name: "x", EnvPrefix: "X"}, WaitForAPI: ok, Reconcile: rec, Delete: rec},
		"group prune scope without prune": {Metadata: Metadata{Name: "x", EnvPrefix: "X", PruneScope: PruneScopeGroup},
			WaitForAPI: ok, Reconcile: rec},
		"unknown prune scope": {Metadata: Metadata{Name: "x", EnvPrefix: "X", PruneScope: "tenant"}, WaitForAPI: ok, Reconcile: rec},
		"skip status with lifecycle": {Metadata: Metadata{Name: "x", EnvPrefix: "X", Lifecycle: true, skipStatus: true},
			WaitForAPI: ok, Reconcile: rec},
		"status keys with skip status": {Metadata: Metadata{Name: "x", EnvPrefix: "X", skipStatus: true, StatusKeys: []string{"id"}},
			WaitForAPI: ok, Reconcile: rec},
		"lifecycle status keys without id": {Metadata: Metadata{Name: "x", EnvPrefix: "X", Lifecycle: true, StatusKeys: []string{"resource"}},
			WaitForAPI: ok, Reconcile: rec},
		"status key twice": {Metadata: Metadata{Name: "x", EnvPrefix: "X", StatusKeys: []string{"a", "a"}}, WaitForAPI: ok, Reconcile: rec},
		"empty status key": {Metadata: Metadata{Name: "x", EnvPrefix: "X", StatusKeys: []string{""}}, WaitForAPI: ok, Reconcile: rec},
		"profile prune policy without prune": {Metadata: Metadata{Name: "x", EnvPrefix: "X",
			Profiles: map[string]ProfileMetadata{"understack": {Cleanup: Cleanup{WhenPrune: CleanupFinalizedPrune}}}}, WaitForAPI: ok, Reconcile: rec},
		"profile prune scope group without prune": {Metadata: Metadata{Name: "x", EnvPrefix: "X",
			Profiles: map[string]ProfileMetadata{"understack": {PruneScope: PruneScopeGroup}}}, WaitForAPI: ok, Reconcile: rec},
		"unknown profile prune scope": {Metadata: Metadata{Name: "x", EnvPrefix: "X",
			Profiles: map[string]ProfileMetadata{"understack": {PruneScope: "tenant"}}}, WaitForAPI: ok, Reconcile: rec,
			Prune: func(*Context, *PruneRequest) error { return nil }},
		"unknown profile policy": {Metadata: Metadata{Name: "x", EnvPrefix: "X",
			Profiles: map[string]ProfileMetadata{"understack": {Cleanup: Cleanup{WhenNoPrune: "SOMETIMES"}}}}, WaitForAPI: ok, Reconcile: rec},
		"prune keys without prune": {Metadata: Metadata{Name: "x", EnvPrefix: "X", PruneKeys: []string{"name"}}, WaitForAPI: ok, Reconcile: rec},
		"prune key twice": {Metadata: Metadata{Name: "x", EnvPrefix: "X", HasPrune: true, PruneKeys: []string{"a", "a"}},
			WaitForAPI: ok, Reconcile: rec, Prune: func(*Context, *PruneRequest) error { return nil }},
		"best effort prune with only delete": {Metadata: Metadata{Name: "x", EnvPrefix: "X", Lifecycle: true,
			Cleanup: Cleanup{WhenPrune: CleanupBestEffortPrune}}, WaitForAPI: ok, Reconcile: rec, Delete: rec},
	}
	for name, p := range cases {
		t.Run(name, func(t *testing.T) {
			withoutPlugin(t)
			assert.Panics(t, func() { Register(p) })
		})
	}
}

func TestServiceClientTypedErrorsAndEncoding(t *testing.T) {
	h := &recordingHost{answer: func(r *Request) (*Response, error) {
		switch r.Path {
		case "v2.0/missing":
			return &Response{StatusCode: 404, Body: []byte(`{"NeutronError":{"message":"Flavor x could not be found"}}`)}, nil
		case "v1/runbooks/r":
			return &Response{StatusCode: 409, Body: []byte(`{"error_message":"{\"faultstring\":\"Runbook in use\"}"}`)}, nil
		}
		return &Response{StatusCode: 201, Body: []byte(`{"name":"made"}`)}, nil
	}}
	ctx := newContext(h, nil)
	net := ctx.OpenStack("network")

	err := net.Get("v2.0/missing", nil, nil)
	assert.True(t, IsNotFound(err))
	assert.EqualError(t, err, "GET v2.0/missing: HTTP 404 Not Found: Flavor x could not be found")

	err = ctx.OpenStack("baremetal").Microversion("1.92").Patch("v1/runbooks/r", []map[string]string{{"op": "add"}}, nil)
	assert.True(t, IsConflict(err))
	assert.Equal(t, 409, StatusCode(err))
	assert.Contains(t, err.Error(), "Runbook in use")
	assert.Equal(t, "1.92", h.requests[1].Microversion)

	var out spec
	require.NoError(t, net.Post("v2.0/flavors", spec{Name: "a"}, &out))
	assert.Equal(t, "made", out.Name)
	raw, err := encodeRequest(h.requests[2])
	require.NoError(t, err)
	assert.JSONEq(t, `{"service":"network","method":"POST","path":"v2.0/flavors","body":{"name":"a"}}`, string(raw))

	_, err = encodeRequest(&Request{Method: "POST", Body: []byte("not json")})
	assert.ErrorContains(t, err, "body is not valid JSON")
}

func TestDecodeResponse(t *testing.T) {
	slow := slowDecodes.Load()
	resp, err := decodeResponse([]byte("{\"status\":200,\"headers\":{\"X\":[\"y\"]}}\n{\"a\":\n1}"))
	require.NoError(t, err)
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, map[string][]string{"X": {"y"}}, resp.Header)
	assert.Equal(t, "{\"a\":\n1}", string(resp.Body), "the body after the head is kept byte for byte")

	resp, err = decodeResponse([]byte("{\"status\":503,\"headers\":null}\ndown"))
	require.NoError(t, err)
	assert.Equal(t, "down", string(resp.Body))

	resp, err = decodeResponse([]byte(`{"status":204,"headers":{}}` + "\n"))
	require.NoError(t, err)
	assert.Empty(t, resp.Body)

	_, err = decodeResponse([]byte(`{"error":{"kind":"grant_denied","message":"no","permanent":true}}`))
	var he *HostError
	require.ErrorAs(t, err, &he)
	assert.True(t, IsPermanent(err))
	assert.Equal(t, "grant_denied", he.Kind)
	assert.Equal(t, slow, slowDecodes.Load(), "the host's heads take the PDK's own decoder, never encoding/json")

	_, err = decodeResponse([]byte(`{`))
	assert.Error(t, err)
}

func TestHasCurrentABI(t *testing.T) {
	for in, want := range map[string]bool{
		`{"abi_version":1}`:           true,
		`{"abi_version":1,"spec":{}}`: true,
		`{"abi_version":12}`:          false,
		`{"abi_version":2}`:           false,
		`{"spec":{},"abi_version":1}`: false,
		``:                            false,
	} {
		assert.Equal(t, want, hasCurrentABI([]byte(in)), in)
	}
}

func TestDispatchDeleteGetsTheDeletedCRAndReturnsItsLifecycle(t *testing.T) {
	var seen *ReconcileRequest
	withPlugin(t, Plugin{
		Metadata:   Metadata{Name: "x", EnvPrefix: "X", Lifecycle: true, Cleanup: Cleanup{WhenPrune: CleanupFinalizedPrune}},
		WaitForAPI: func(*Context) error { return nil },
		Reconcile:  func(*Context, *ReconcileRequest) (*Result, error) { return nil, nil },
		Delete: func(_ *Context, req *ReconcileRequest) (*Result, error) {
			seen = req
			return &Result{Lifecycle: &LifecycleStatus{Available: "False", Reason: "Progressing", Message: "deleting",
				RequeueSeconds: 5}}, nil
		},
	})
	var in instance
	meta, werr := in.dispatch(abi.EntryMetadata, nil, &recordingHost{})
	require.Nil(t, werr)
	assert.Contains(t, string(meta), `"has_delete":true`)
	assert.Contains(t, string(meta), `"lifecycle":true`)
	out, werr := in.dispatch(abi.EntryDelete, []byte(`{"abi_version":1,"object":{"kind":"K","name":"a"},"spec":{"name":"a"},"status":{"id":"r1"}}`), &recordingHost{})
	require.Nil(t, werr)
	require.NotNil(t, seen)
	assert.Equal(t, "r1", seen.Status["id"])
	assert.JSONEq(t, `{"name":"a"}`, string(seen.Spec))
	assert.JSONEq(t, `{"lifecycle":{"available":"False","reason":"Progressing","message":"deleting","requeue_seconds":5}}`, string(out))
}

func TestDispatchDeleteWithoutHandlerIsPermanent(t *testing.T) {
	withPlugin(t, Plugin{Metadata: Metadata{Name: "x", EnvPrefix: "X"}, WaitForAPI: func(*Context) error { return nil },
		Reconcile: func(*Context, *ReconcileRequest) (*Result, error) { return nil, nil }})
	var in instance
	_, werr := in.dispatch(abi.EntryDelete, []byte(`{"abi_version":1}`), &recordingHost{})
	require.NotNil(t, werr)
	assert.True(t, werr.Permanent)
	assert.Contains(t, werr.Message, "no delete handler")
}

func TestRegisteredIsACopy(t *testing.T) {
	withPlugin(t, Plugin{Metadata: Metadata{Name: "x", EnvPrefix: "X",
		Grants: []Grant{{Service: "network", Methods: []string{"GET"}, Paths: []string{"v2.0/a"}}}},
		WaitForAPI: func(*Context) error { return nil },
		Reconcile:  func(*Context, *ReconcileRequest) (*Result, error) { return nil, nil }})
	p := Registered()
	p.Metadata.Name = "changed"
	p.Metadata.Grants[0].Paths[0] = "**"
	p.Reconcile = nil
	again := Registered()
	assert.Equal(t, "x", again.Metadata.Name)
	assert.Equal(t, []string{"v2.0/a"}, again.Metadata.Grants[0].Paths, "a test cannot widen what the module serves")
	assert.NotNil(t, again.Reconcile)
}

func TestDecodeSpecRefusesUnknownFields(t *testing.T) {
	type spec struct {
		Name string `json:"name"`
	}
	cases := []struct {
		spec string
		want string
	}{
		{`{"name": "a"}`, ""},
		{`{"name": "a", "nmae": "b"}`, `spec: json: unknown field "nmae"`},
		{`{"name": 5}`, "spec: json: cannot unmarshal number"},
		{``, "the CR has no spec"},
		// A json.Decoder stops after the first value; DecodeSpec must not take what follows it.
		{`{"name": "a"} {}`, "spec: invalid character '{' after top-level value"},
		{`null0`, "spec: invalid character '0' after top-level value"},
		{`{"name": "a"}x`, "spec: invalid character 'x' after top-level value"},
		{"{\"name\": \"a\"} \n", ""},
	}
	for _, c := range cases {
		req := ReconcileRequest{Spec: json.RawMessage(c.spec)}
		var s spec
		err := req.DecodeSpec(&s)
		if c.want == "" {
			if err != nil || s.Name != "a" {
				t.Errorf("%s: got %+v, %v", c.spec, s, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.spec, err, c.want)
		}
	}
}

func TestRemarkDispatch(t *testing.T) {
	withoutPlugin(t)
	var got *RemarkRequest
	Register(Plugin{Metadata: Metadata{Name: "x", EnvPrefix: "X"}, WaitForAPI: func(*Context) error { return nil },
		Reconcile: func(*Context, *ReconcileRequest) (*Result, error) { return nil, nil },
		Remark: func(_ *Context, req *RemarkRequest) (*RemarkResult, error) {
			got = req
			return &RemarkResult{Changes: []string{"thing a: marker x -> y"}}, nil
		}})
	assert.True(t, Registered().Metadata.HasRemark)
	in := &instance{}
	out, werr := in.dispatch(abi.EntryRemark, []byte(`{"abi_version":1,"object":{"kind":"K","name":"a"},"spec":{"name":"a"},"from":"understack","to":"openstack-sync","dry_run":true}`), &recordingHost{})
	require.Nil(t, werr)
	assert.JSONEq(t, `{"changes":["thing a: marker x -> y"]}`, string(out))
	assert.Equal(t, "understack", got.From)
	assert.Equal(t, "openstack-sync", got.To)
	assert.True(t, got.DryRun)
	var spec struct{ Name string }
	require.NoError(t, got.DecodeSpec(&spec))
	assert.Equal(t, "a", spec.Name)
}
