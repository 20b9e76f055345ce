package pdktest_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/experimental"
	"github.com/openstack-sync/openstack-sync/pdk/pdktest"
)

// thingPlugin converges one thing's size, reading it by GET; evidence picks what it hands the
// memo from the thing's JSON as read.
func thingPlugin(evidence func(raw []byte, name, size string) [][]byte) *pdk.Plugin {
	meta := pdk.Metadata{Name: "things", EnvPrefix: "THING", BindingName: "things",
		Grants: []pdk.Grant{{Service: "network", Methods: []string{"GET", "PUT"}, Paths: []string{"v2.0/things/*"}}}}
	experimental.SkipStatus(&meta)
	return &pdk.Plugin{
		Metadata:   meta,
		WaitForAPI: func(*pdk.Context) error { return nil },
		Reconcile: func(ctx *pdk.Context, req *pdk.ReconcileRequest) (*pdk.Result, error) {
			var spec struct {
				Name string `json:"name"`
				Size int    `json:"size"`
			}
			if err := req.DecodeSpec(&spec); err != nil {
				return nil, err
			}
			var raw json.RawMessage
			if err := ctx.OpenStack("network").Get("v2.0/things/"+spec.Name, nil, &raw); err != nil {
				return nil, err
			}
			var thing struct {
				Thing struct {
					Name string `json:"name"`
					Size int    `json:"size"`
				} `json:"thing"`
			}
			if err := json.Unmarshal(raw, &thing); err != nil {
				return nil, err
			}
			if experimental.Unchanged(ctx, evidence(raw, thing.Thing.Name, fmt.Sprint(thing.Thing.Size))...) {
				return experimental.Recorded(), nil
			}
			if thing.Thing.Size != spec.Size {
				return &pdk.Result{}, ctx.OpenStack("network").Put("v2.0/things/"+spec.Name,
					map[string]any{"thing": map[string]int{"size": spec.Size}}, nil)
			}
			return &pdk.Result{Notes: []string{"converged " + thing.Thing.Name}}, nil
		},
	}
}

// failures is a testing.TB that keeps what a helper reports instead of failing the test.
type failures struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

type fatal struct{}

func (f *failures) Helper() {}
func (f *failures) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}
func (f *failures) Fatalf(format string, args ...any) {
	f.Errorf(format, args...)
	panic(fatal{})
}

func requireEvidence(t *testing.T, p *pdk.Plugin, body string) []string {
	f := &failures{TB: t}
	func() {
		defer func() {
			if r := recover(); r != nil && r != (fatal{}) {
				panic(r)
			}
		}()
		pdktest.RequireCompleteEvidence(f, pdktest.Options{Grants: p.Metadata.Grants,
			Handler: func(req *pdk.Request) (*pdk.Response, error) { return pdktest.JSON(200, json.RawMessage(body)), nil }},
			pdktest.CR{Plugin: p, Object: pdk.Object{Kind: "Thing", Namespace: "ns", Name: "a"},
				Spec: map[string]any{"name": "a", "size": 3}})
	}()
	return f.errors
}

// The helper passes a plugin whose evidence is what it read, and one whose evidence leaves out
// only what its verdict does not rest on; it names the field a plugin's evidence leaves out when
// its verdict rests on it.
func TestRequireCompleteEvidence(t *testing.T) {
	const body = `{"thing":{"name":"a","size":3,"updated_at":"2026-12-03T00:00:00Z"}}`
	whole := thingPlugin(func(raw []byte, _, _ string) [][]byte { return [][]byte{raw} })
	assert.Empty(t, requireEvidence(t, whole, body), "the JSON as read covers every field")

	read := thingPlugin(func(_ []byte, name, size string) [][]byte { return [][]byte{[]byte(name), []byte(size)} })
	assert.Empty(t, requireEvidence(t, read, body), "updated_at is not read: its change does not matter")

	nameOnly := thingPlugin(func(_ []byte, name, _ string) [][]byte { return [][]byte{[]byte(name)} })
	errs := requireEvidence(t, nameOnly, body)
	require.NotEmpty(t, errs, "the size the verdict compares is left out")
	assert.Contains(t, errs[0], "does not cover $.thing.size of the answer to GET network v2.0/things/a: with it 3 changed to 4, "+
		"the plugin's verdict changes (it writes PUT v2.0/things/a)")
	for _, e := range errs {
		assert.NotContains(t, e, "updated_at")
		assert.NotContains(t, e, "$.thing.name", "the name is in the evidence")
	}

	notConverged := requireEvidence(t, whole, strings.Replace(body, `"size":3`, `"size":9`, 1))
	require.Len(t, notConverged, 1)
	assert.Contains(t, notConverged[0], "the CR is not converged: its reconcile wrote PUT v2.0/things/a")

	never := thingPlugin(func([]byte, string, string) [][]byte { return nil })
	never.Reconcile = func(ctx *pdk.Context, req *pdk.ReconcileRequest) (*pdk.Result, error) { return &pdk.Result{}, nil }
	assert.Contains(t, requireEvidence(t, never, body)[0], "the plugin never asked the memo")
}
