package finalizer_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/finalizer"
	"github.com/openstack-sync/openstack-sync/host/internal/kube"
	"github.com/openstack-sync/openstack-sync/host/internal/kube/kubetest"
	"github.com/openstack-sync/openstack-sync/host/internal/kubeapi"
	"github.com/openstack-sync/openstack-sync/host/internal/profile"
	"github.com/openstack-sync/openstack-sync/host/internal/resource"
)

const (
	F = resource.Finalizer
	// U is the finalizer of the understack profile.
	U = profile.FinalizerUnderstack
)

var (
	target = kubeapi.Target{Group: "example.openstack-sync.io", Version: "v1alpha1", Plural: "widgets", Namespace: "ns", Name: "a"}
	path   = kubetest.ObjectPath("example.openstack-sync.io", "v1alpha1", "widgets", "ns", "a")
)

func TestPatchForms(t *testing.T) {
	tests := []struct {
		name   string
		cr     resource.Resource
		action finalizer.Action
		// fin is the finalizer written, F when empty.
		fin  string
		want string
		err  string
	}{
		{name: "add to empty list", cr: resource.Resource{Name: "a", ResourceVersion: "7"}, action: finalizer.Add,
			want: `[{"op":"test","path":"/metadata/resourceVersion","value":"7"},{"op":"add","path":"/metadata/finalizers","value":["` + F + `"]}]`},
		{name: "add to a list", cr: resource.Resource{Name: "a", ResourceVersion: "7", Finalizers: []string{"x/y"}}, action: finalizer.Add,
			want: `[{"op":"test","path":"/metadata/resourceVersion","value":"7"},{"op":"add","path":"/metadata/finalizers/-","value":"` + F + `"}]`},
		{name: "add when present", cr: resource.Resource{Name: "a", ResourceVersion: "7", Finalizers: []string{F}}, action: finalizer.Add},
		{name: "add without resourceVersion", cr: resource.Resource{Name: "a"}, action: finalizer.Add,
			err: "unable to add finalizer to Widget a; metadata.resourceVersion is missing"},
		{name: "remove by index", cr: resource.Resource{Name: "a", Finalizers: []string{"x/y", F, "z"}}, action: finalizer.Remove,
			want: `[{"op":"test","path":"/metadata/finalizers/1","value":"` + F + `"},{"op":"remove","path":"/metadata/finalizers/1"}]`},
		{name: "release by index", cr: resource.Resource{Name: "a", Finalizers: []string{F}}, action: finalizer.Release,
			want: `[{"op":"test","path":"/metadata/finalizers/0","value":"` + F + `"},{"op":"remove","path":"/metadata/finalizers/0"}]`},
		{name: "remove when absent", cr: resource.Resource{Name: "a", Finalizers: []string{"x/y"}}, action: finalizer.Remove},
		{name: "add the understack profile's beside this project's", cr: resource.Resource{Name: "a", ResourceVersion: "7", Finalizers: []string{F}},
			action: finalizer.Add, fin: U,
			want: `[{"op":"test","path":"/metadata/resourceVersion","value":"7"},{"op":"add","path":"/metadata/finalizers/-","value":"` + U + `"}]`},
		{name: "release the understack profile's, this project's left alone", cr: resource.Resource{Name: "a", Finalizers: []string{F, U}},
			action: finalizer.Release, fin: U,
			want: `[{"op":"test","path":"/metadata/finalizers/1","value":"` + U + `"},{"op":"remove","path":"/metadata/finalizers/1"}]`},
		{name: "release of another profile's finalizer is no request", cr: resource.Resource{Name: "a", Finalizers: []string{U}},
			action: finalizer.Release},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fin := tt.fin
			if fin == "" {
				fin = F
			}
			got, err := finalizer.Patch(&tt.cr, "Widget", tt.action, fin)
			if tt.err != "" {
				assert.EqualError(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			if tt.want == "" {
				assert.Nil(t, got)
				return
			}
			assert.JSONEq(t, tt.want, string(got))
		})
	}
}

func obj(rv string, finalizers ...any) map[string]any {
	return map[string]any{"metadata": map[string]any{"name": "a", "namespace": "ns", "resourceVersion": rv, "finalizers": finalizers}}
}

// TestApply runs each write through the real client-go code against an API server that applies
// JSON patches as Kubernetes does, so a stale resourceVersion or index really is rejected.
func TestApply(t *testing.T) {
	tests := []struct {
		name      string
		live      map[string]any // nil: no object
		cr        resource.Resource
		action    finalizer.Action
		intercept func(kubetest.Request) (int, string, bool)
		// wantLive is the finalizer list afterwards; nil skips the check.
		wantLive []any
		err      string
		logs     []string
		requests int
	}{
		{name: "add", live: obj("7", "x/y"), cr: resource.Resource{Name: "a", ResourceVersion: "7", Finalizers: []string{"x/y"}},
			action: finalizer.Add, wantLive: []any{"x/y", F}, requests: 1},
		{name: "add to empty list", live: obj("7"), cr: resource.Resource{Name: "a", ResourceVersion: "7"},
			action: finalizer.Add, wantLive: []any{F}, requests: 1},
		{name: "stale add rejected, live lacks it", live: obj("8"), cr: resource.Resource{Name: "a", ResourceVersion: "7"},
			action: finalizer.Add, wantLive: []any{}, requests: 2,
			err: "failed to add finalizer to Widget a: HTTP 422 Unprocessable Entity: "},
		{name: "stale add rejected, live has it", live: obj("8", F), cr: resource.Resource{Name: "a", ResourceVersion: "7"},
			action: finalizer.Add, wantLive: []any{F}, requests: 2,
			logs: []string{`msg="the CR already has the desired finalizer state after a rejected metadata patch" kind=Widget namespace=ns name=a`}},
		{name: "remove keeps other finalizers", live: obj("7", "x/y", F, "z"), cr: resource.Resource{Name: "a", Finalizers: []string{"x/y", F, "z"}},
			action: finalizer.Remove, wantLive: []any{"x/y", "z"}, requests: 1},
		{name: "stale index rejected, finalizer already gone", live: obj("9", "z", "x/y"), cr: resource.Resource{Name: "a", Finalizers: []string{"x/y", F}},
			action: finalizer.Remove, wantLive: []any{"z", "x/y"}, requests: 2,
			logs: []string{"already has the desired finalizer state"}},
		{name: "stale index rejected, finalizer moved", live: obj("9", F, "x/y"), cr: resource.Resource{Name: "a", Finalizers: []string{"x/y", F}},
			action: finalizer.Release, wantLive: []any{F, "x/y"}, requests: 2,
			err: "failed to release finalizer from Widget a: HTTP 422"},
		{name: "release of a gone object", cr: resource.Resource{Name: "a", Finalizers: []string{F}},
			action: finalizer.Release, requests: 1},
		{name: "remove from a gone object fails", cr: resource.Resource{Name: "a", Finalizers: []string{F}},
			action: finalizer.Remove, requests: 2, err: "failed to remove finalizer from Widget a: HTTP 404 Not Found",
			logs: []string{`msg="failed to verify finalizers after a rejected metadata patch" kind=Widget namespace=ns name=a error="HTTP 404 Not Found`}},
		{name: "release when the route is missing", live: obj("7", F), cr: resource.Resource{Name: "a", Finalizers: []string{F}},
			action: finalizer.Release, requests: 2, wantLive: []any{F},
			intercept: func(kubetest.Request) (int, string, bool) { return 404, "404 page not found", true },
			err:       "failed to release finalizer from Widget a: HTTP 404 Not Found",
			logs:      []string{`msg="failed to verify finalizers after a rejected metadata patch" kind=Widget namespace=ns name=a error="HTTP 404 Not Found`}},
		{name: "release with a 404 naming another object", live: obj("7", F), cr: resource.Resource{Name: "a", Finalizers: []string{F}},
			action: finalizer.Release, requests: 2, wantLive: []any{F},
			intercept: func(r kubetest.Request) (int, string, bool) {
				return 404, kubetest.Status(404, "NotFound", "widgets.example.openstack-sync.io", "not found"), r.Method == "PATCH"
			},
			err: "failed to release finalizer from Widget a: HTTP 404 Not Found"},
		{name: "forbidden add, verified absent", live: obj("7"), cr: resource.Resource{Name: "a", ResourceVersion: "7"},
			action: finalizer.Add, requests: 2, wantLive: []any{},
			intercept: func(r kubetest.Request) (int, string, bool) {
				return 403, kubetest.Status(403, "Forbidden", "a", "forbidden"), r.Method == "PATCH"
			},
			err: "failed to add finalizer to Widget a: HTTP 403 Forbidden"},
		{name: "no request when nothing to do", live: obj("7", F), cr: resource.Resource{Name: "a", ResourceVersion: "7", Finalizers: []string{F}},
			action: finalizer.Add, requests: 0, wantLive: []any{F}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := kubetest.NewServer(t)
			if tt.live != nil {
				s.Put(path, tt.live)
			}
			s.Intercept = tt.intercept
			c, err := kube.NewForConfig(s.Config(), kube.Limit{})
			require.NoError(t, err)
			var logs bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			err = finalizer.Apply(context.Background(), c, log, target, &tt.cr, "Widget", tt.action, F)
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
			} else {
				require.NoError(t, err)
			}
			assert.Len(t, s.Requests(), tt.requests)
			if tt.wantLive != nil {
				fs, _ := s.Object(path)["metadata"].(map[string]any)["finalizers"].([]any)
				if fs == nil {
					fs = []any{}
				}
				assert.Equal(t, tt.wantLive, fs)
			}
			for _, l := range tt.logs {
				assert.Contains(t, logs.String(), l)
			}
		})
	}
}

func TestTransportErrorIsNotVerified(t *testing.T) {
	s := kubetest.NewServer(t)
	c, err := kube.NewForConfig(s.Config(), kube.Limit{})
	require.NoError(t, err)
	s.Close()
	cr := resource.Resource{Name: "a", Finalizers: []string{F}}
	err = finalizer.Apply(context.Background(), c, slog.New(slog.DiscardHandler), target, &cr, "Widget", finalizer.Release, F)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "failed to release finalizer from Widget a: ")
	_, isAPI := kubeapi.AsAPIError(err)
	assert.False(t, isAPI)
}
