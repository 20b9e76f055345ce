package wasm

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

func TestWellBehavedPluginRunsThroughTheAdapter(t *testing.T) {
	ctx := context.Background()
	o, logs := testOptions(t, "MOCK_FOO=bar", "HOME=/root", "OTHER_FOO=no")
	p := loadTest(t, guest(t, "pdkmock"), o)

	assert.Equal(t, plugin.Metadata{Name: "mock", Noun: "mock thing", EnvPrefix: "MOCK", BindingName: "mocks"}, p.Metadata())
	assert.Equal(t, plugin.CleanupFinalizedPrune, p.CleanupPolicy(true), "default with a prune step")
	assert.Equal(t, plugin.CleanupBestEffortPrune, p.CleanupPolicy(false), "declared by the plugin")

	s := &fakeSession{}
	require.NoError(t, p.WaitForAPI(ctx, s))
	require.Len(t, s.Requests(), 1)
	assert.Equal(t, "GET", s.Requests()[0].Method)

	cache, err := p.NewCache(ctx)
	require.NoError(t, err)
	for i, want := range []string{"group call 1", "group call 2"} {
		res, err := p.Reconcile(ctx, s, cache, crRequest("a", map[string]any{"name": "a"}))
		require.NoError(t, err, i)
		assert.Equal(t, []string{want}, res.Notes)
		assert.Equal(t, map[string]any{"thing_id": "id-a"}, res.ExtraStatus)
	}
	require.NoError(t, cache.Close(ctx))
	cache, err = p.NewCache(ctx)
	require.NoError(t, err)
	res, err := p.Reconcile(ctx, s, cache, crRequest("a", map[string]any{"name": "a"}))
	require.NoError(t, err)
	assert.Equal(t, []string{"group call 1"}, res.Notes, "nothing is cached across groups")
	require.NoError(t, cache.Close(ctx))

	reqs := s.Requests()
	post := reqs[2]
	assert.Equal(t, "POST", post.Method)
	assert.Equal(t, "network", post.Service)
	assert.Equal(t, "2.1", post.Microversion)
	assert.JSONEq(t, `{"thing":{"name":"a"}}`, string(post.Body))

	assert.Contains(t, logs.String(), `msg="reconciling a" plugin=mock kind=Mock cr=ns/a source=guest`,
		"guest log lines name the plugin and the CR")

	require.NoError(t, p.Prune(ctx, s, plugin.PruneRequest{DesiredSpecs: []json.RawMessage{json.RawMessage(`{"name":"a"}`)}}))
	assert.Contains(t, logs.String(), "prune: 1 desired, authoritative_empty=false")
}

func TestConfigIsOnlyThePluginsPrefixedEnvironment(t *testing.T) {
	ctx := context.Background()
	o, _ := testOptions(t, "MOCK_FOO=bar", "HOME=/root", "OTHER_FOO=no", "MOCK_=empty-key")
	p := loadTest(t, guest(t, "pdkmock"), o)
	cases := map[string]string{
		"FOO":       `FOO="bar" true`,
		"HOME":      `HOME="" false`,
		"MOCK_FOO":  `MOCK_FOO="" false`,
		"OTHER_FOO": `OTHER_FOO="" false`,
	}
	for key, want := range cases {
		res, err := p.Reconcile(ctx, &fakeSession{}, nil, crRequest("c", map[string]any{"action": "config", "name": key}))
		require.NoError(t, err)
		assert.Equal(t, []string{want}, res.Notes, key)
	}

	o.EnvPrefix = "OTHER"
	p = loadTest(t, guest(t, "pdkmock"), o)
	res, err := p.Reconcile(ctx, &fakeSession{}, nil, crRequest("c", map[string]any{"action": "config", "name": "FOO"}))
	require.NoError(t, err)
	assert.Equal(t, []string{`FOO="no" true`}, res.Notes, "the env prefix override selects the variables")
}

func TestPermanentSessionErrorMakesTheCallPermanent(t *testing.T) {
	ctx := context.Background()
	o, _ := testOptions(t)
	p := loadTest(t, guest(t, "pdkmock"), o)
	s := &fakeSession{Fail: plugin.Permanent(errors.New("Keystone refused the password for cloud \"prod\""))}

	err := p.WaitForAPI(ctx, s)
	require.Error(t, err)
	assert.True(t, plugin.IsPermanent(err))
	assert.Contains(t, err.Error(), `Keystone refused the password for cloud "prod"`)

	_, err = p.Reconcile(ctx, s, nil, crRequest("a", map[string]any{"name": "a"}))
	require.Error(t, err)
	assert.True(t, plugin.IsPermanent(err))
	assert.Contains(t, err.Error(), "Keystone refused the password")

	s.Fail = errors.New("connection refused")
	err = p.WaitForAPI(ctx, s)
	require.Error(t, err)
	assert.False(t, plugin.IsPermanent(err), "a transient outage stays retryable")
}

func TestGuestErrorsKeepReasonAndPermanence(t *testing.T) {
	ctx := context.Background()
	o, _ := testOptions(t)
	p := loadTest(t, guest(t, "pdkmock"), o)
	_, err := p.Reconcile(ctx, &fakeSession{}, nil, crRequest("a", map[string]any{"action": "fail"}))
	require.Error(t, err)
	assert.Equal(t, "mock failure on purpose", err.Error(), "a reported error is the plugin's own message")
	assert.Equal(t, "MockFailure", plugin.Reason(err))
	assert.False(t, plugin.IsPermanent(err))

	_, err = p.Reconcile(ctx, &fakeSession{}, nil, crRequest("a", map[string]any{"action": "permanent"}))
	assert.True(t, plugin.IsPermanent(err))
}

// Metadata names are repeated in every log line, request header and status message: a guest
// must not be able to make them huge or multi-line.
func TestMetadataNamesAreChecked(t *testing.T) {
	ok := metadataMessage{Name: "neutron-router-flavors", Noun: "router flavor", EnvPrefix: "NEUTRON_ROUTER_FLAVOR",
		BindingName: "neutron-router-flavors", Version: "v1.4.0-rc.1+g3e1f", Description: "Router flavors, from CRs",
		Source: "oci://registry.example/plugins/flavors@sha256:0123"}
	require.NoError(t, ok.checkNames())
	probe := metadataMessage{Name: "openstack-probe", EnvPrefix: "OPENSTACK_PROBE"}
	require.NoError(t, probe.checkNames(), "a probe has no binding or noun")

	cases := map[string]struct {
		edit func(*metadataMessage)
		want string
	}{
		"huge name":                  {func(m *metadataMessage) { m.Name = strings.Repeat("a", 1<<20) }, "name \"aaaa"},
		"name with a newline":        {func(m *metadataMessage) { m.Name = "x\ny" }, "is not a lower-case DNS label"},
		"upper-case name":            {func(m *metadataMessage) { m.Name = "Widgets" }, "is not a lower-case DNS label"},
		"prefix with =":              {func(m *metadataMessage) { m.EnvPrefix = "A=B" }, "env_prefix \"A=B\" is not an upper-case variable name"},
		"lower-case prefix":          {func(m *metadataMessage) { m.EnvPrefix = "widget" }, "env_prefix"},
		"binding with space":         {func(m *metadataMessage) { m.BindingName = "a b" }, "binding_name"},
		"huge noun":                  {func(m *metadataMessage) { m.Noun = strings.Repeat("n", 65) }, "noun"},
		"noun with a newline":        {func(m *metadataMessage) { m.Noun = "a\nb" }, "noun"},
		"version with a space":       {func(m *metadataMessage) { m.Version = "1.0 beta" }, "version \"1.0 beta\" is not a word"},
		"huge version":               {func(m *metadataMessage) { m.Version = strings.Repeat("1", 65) }, "version"},
		"description with a newline": {func(m *metadataMessage) { m.Description = "a\nb" }, "description"},
		"huge description":           {func(m *metadataMessage) { m.Description = strings.Repeat("d", 513) }, "description"},
		"source with a tab":          {func(m *metadataMessage) { m.Source = "https://x\ty" }, "source"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			m := ok
			c.edit(&m)
			err := m.checkNames()
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.Less(t, len(err.Error()), 300, "the refusal quotes the name cut")
		})
	}
}

// An instance serves one credential group and is then retired, so nothing a guest keeps in memory
// (globals, vars, a cache it forgot to drop) can reach another group's calls.
func TestAnInstanceNeverServesTwoCredentialGroups(t *testing.T) {
	ctx := context.Background()
	o, _ := testOptions(t)
	p := loadTest(t, guest(t, "pdkmock"), o)
	s := &fakeSession{}
	seen := map[uint64]string{}
	use := func(what string, id uint64) {
		t.Helper()
		if prev, ok := seen[id]; ok {
			t.Fatalf("instance %d served %q and then %q", id, prev, what)
		}
		seen[id] = what
	}
	for _, group := range []string{"group 1", "group 2"} {
		require.NoError(t, p.WaitForAPI(ctx, s))
		cache, err := p.NewCache(ctx)
		require.NoError(t, err)
		use(group+" reconciles", cache.(*groupCache).inst.id)
		for range 2 {
			_, err := p.Reconcile(ctx, s, cache, crRequest("a", map[string]any{"name": "a"}))
			require.NoError(t, err)
		}
		require.NoError(t, cache.Close(ctx))
		require.NoError(t, p.Prune(ctx, s, plugin.PruneRequest{DesiredSpecs: []json.RawMessage{json.RawMessage(`{"name":"a"}`)}}))
	}
	// The next checkout after any group call is a fresh instance: the pool holds nothing that ran
	// with a session.
	inst, err := p.pool.get(ctx)
	require.NoError(t, err)
	use("a later checkout", inst.id)
	p.pool.put(ctx, inst)
}

// status_keys: the host refuses what it could not honour and sends only the keys listed.
func TestStatusKeys(t *testing.T) {
	for name, c := range map[string]struct {
		m    metadataMessage
		want string
	}{
		"with skip_status":     {metadataMessage{SkipStatus: true, StatusKeys: []string{"id"}}, "but so is skip_status"},
		"lifecycle without id": {metadataMessage{Lifecycle: true, StatusKeys: []string{"resource"}}, `must include "id"`},
		"twice":                {metadataMessage{StatusKeys: []string{"id", "id"}}, `"id" is listed twice`},
		"empty":                {metadataMessage{StatusKeys: []string{""}}, "not 1 to 63 printable"},
		"a newline":            {metadataMessage{StatusKeys: []string{"a\nb"}}, "not 1 to 63 printable"},
		"too many":             {metadataMessage{StatusKeys: strings.Split("a b c d e f g h i j k l m n o p q", " ")}, "at most 16"},
	} {
		err := c.m.checkStatusKeys()
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), c.want, name)
	}
	m := metadataMessage{Lifecycle: true, StatusKeys: []string{"id", "absent"}}
	require.NoError(t, m.checkStatusKeys())
	status := map[string]any{"id": "r1", "syncStatus": "Synced", "conditions": []any{map[string]any{"type": "Ready"}}}
	assert.Equal(t, map[string]any{"id": "r1"}, m.statusFor(status), "only the keys listed, and only those present")
	assert.Nil(t, m.statusFor(nil))
	all := metadataMessage{}
	assert.Equal(t, status, all.statusFor(status), "no keys: the whole status")
	skip := metadataMessage{SkipStatus: true}
	assert.Nil(t, skip.statusFor(status))
}

// prune_keys: only a plugin with a prune lists them, by the rules of status_keys, and the host's
// metadata carries them to the framework, which trims the desired specs (runner).
func TestPruneKeys(t *testing.T) {
	for name, c := range map[string]struct {
		m    metadataMessage
		want string
	}{
		"without a prune": {metadataMessage{PruneKeys: []string{"name"}}, "has_prune is not"},
		"twice":           {metadataMessage{HasPrune: true, PruneKeys: []string{"name", "name"}}, `prune_keys: key "name" is listed twice`},
		"empty":           {metadataMessage{HasPrune: true, PruneKeys: []string{""}}, "not 1 to 63 printable"},
		"too many":        {metadataMessage{HasPrune: true, PruneKeys: strings.Split("a b c d e f g h i j k l m n o p q", " ")}, "at most 16"},
	} {
		err := c.m.checkPruneKeys()
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), c.want, name)
	}
	m := metadataMessage{Name: "p", HasPrune: true, PruneKeys: []string{"runbookName"}}
	require.NoError(t, m.checkPruneKeys())
	assert.Equal(t, []string{"runbookName"}, m.metadata().PruneKeys)
}

// deterministic reaches the framework, which may then replay a converged run (docs/abi.md, "The
// run replay"); a plugin that does not declare it is never replayed.
func TestDeterministicReachesTheFramework(t *testing.T) {
	assert.True(t, (&metadataMessage{Name: "p", Deterministic: true}).metadata().Deterministic)
	assert.False(t, (&metadataMessage{Name: "p"}).metadata().Deterministic)
}
