package wasmtest

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/modulecache"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

// ThingCloud is a stateful things API for the memo mock (the nativemock guest's "memo" action):
// GET v2.0/things/<name> answers the thing's JSON, POST creates one. Tests change a thing behind
// the plugin's back to see the memo notice.
type ThingCloud struct {
	mu     sync.Mutex
	things map[string]string
	writes int
	reads  int
}

// NewThingCloud is a ThingCloud holding things (name to JSON).
func NewThingCloud(things map[string]string) *ThingCloud { return &ThingCloud{things: things} }

func (c *ThingCloud) Do(_ context.Context, req plugin.Request) (*plugin.Response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	answer := func(status int, body string) *plugin.Response {
		return &plugin.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(body)}
	}
	switch {
	case req.Method == "GET" && strings.HasPrefix(req.Path, "v2.0/things/"):
		c.reads++
		if t, ok := c.things[strings.TrimPrefix(req.Path, "v2.0/things/")]; ok {
			return answer(200, t), nil
		}
		return answer(404, `{"NeutronError":{"message":"Thing not found"}}`), nil
	case req.Method == "POST" && req.Path == "v2.0/things":
		c.writes++
		var body struct {
			Thing struct{ Name string } `json:"thing"`
		}
		_ = json.Unmarshal(req.Body, &body)
		c.things[body.Thing.Name] = `{"thing":{"name":"` + body.Thing.Name + `","size":1}}`
		return answer(201, c.things[body.Thing.Name]), nil
	}
	return answer(400, `{"NeutronError":{"message":"unexpected"}}`), nil
}

// Set changes a thing behind the plugin's back.
func (c *ThingCloud) Set(name, body string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.things[name] = body
}

// Counts are the writes and the reads of a thing the cloud served.
func (c *ThingCloud) Counts() (writes, reads int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writes, c.reads
}

// HookRun is one hook run of the memo mock: a plugin loaded afresh by load (as each run is a
// process of its own), one reconcile of req, Close. It returns the result, the error and whether
// the guest did the full reconcile (it logs "full reconcile" only then).
func HookRun(t testing.TB, load func() (plugin.Plugin, *LogBuffer), cloud plugin.Session, req plugin.ReconcileRequest) (plugin.Result, error, bool) {
	ctx := context.Background()
	p, logs := load()
	cache, err := p.NewCache(ctx)
	require.NoError(t, err)
	res, rerr := p.Reconcile(ctx, cloud, cache, req)
	require.NoError(t, cache.Close(ctx))
	require.NoError(t, p.Close(ctx))
	return res, rerr, strings.Contains(logs.String(), "full reconcile")
}

// ConvergenceMemo is the convergence memo's scenario (docs/abi.md): a CR whose input and evidence
// a successful, write-free reconcile saw before is answered with that reconcile's result without
// the guest's full reconcile; anything that differs (evidence, spec, configuration) reconciles in
// full. load loads the nativemock guest with the memo on in the cache directory dir and the
// environment env (its MOCK_ variables are the plugin's configuration). The sandbox and the
// native runner both run it, as the benchmark compares them.
func ConvergenceMemo(t *testing.T, dir string, load func(env []string) (plugin.Plugin, *LogBuffer)) {
	env := []string{"MOCK_GREETING=hello"}
	cloud := NewThingCloud(map[string]string{})
	run := func(req plugin.ReconcileRequest) (plugin.Result, error, bool) {
		return HookRun(t, func() (plugin.Plugin, *LogBuffer) { return load(env) }, cloud, req)
	}
	req := CRRequest("a", map[string]any{"action": "memo", "name": "a"})

	_, err, full := run(req)
	require.NoError(t, err)
	assert.True(t, full, "nothing recorded yet")
	writes, _ := cloud.Counts()
	assert.Equal(t, 1, writes, "the thing was created")
	memoFile := modulecache.Dir(dir).Path(modulecache.Memo, "MOCK")
	assert.NoFileExists(t, memoFile, "a reconcile that wrote records nothing")

	first, err, full := run(req)
	require.NoError(t, err)
	assert.True(t, full, "the first reconcile of the steady state is full")
	assert.FileExists(t, memoFile, "and, free of writes, recorded")

	again, err, full := run(req)
	require.NoError(t, err)
	assert.False(t, full, "same input, same evidence: the recorded result")
	assert.Equal(t, first, again, "the recorded result is the full reconcile's")

	cloud.Set("a", `{"thing":{"name":"a","size":2}}`)
	changed, err, full := run(req)
	require.NoError(t, err)
	assert.True(t, full, "the evidence changed: a full reconcile")
	assert.Contains(t, changed.Notes[0], `"size":2`)
	_, _, full = run(req)
	assert.False(t, full, "and the new state is recorded")

	req.Object.Generation = new(int64(4))
	_, _, full = run(req)
	assert.True(t, full, "the input changed (a new generation)")

	env = []string{"MOCK_GREETING=bonjour"}
	_, _, full = run(req)
	assert.True(t, full, "the plugin's configuration changed")
	_, _, full = run(req)
	assert.False(t, full)

	other := CRRequest("b", map[string]any{"action": "memo", "name": "a"})
	_, _, full = run(other)
	assert.True(t, full, "records are per CR (UID)")

	writes, reads := cloud.Counts()
	assert.Equal(t, 1, writes, "no reconcile after the create wrote anything")
	assert.Equal(t, 9, reads, "each of the nine runs reads the evidence once")
}
