package wasm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/metrics"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm/kernel"
	"github.com/openstack-sync/openstack-sync/pdk/abi/grant"
)

// Each adversarial guest must produce a clear error naming the plugin and the entry point, leave
// the host running, and not poison the next call: that one runs on a fresh instance and succeeds.
func TestMisbehavingGuestsAreContained(t *testing.T) {
	type call func(ctx context.Context, p *Plugin) error
	reconcile := func(spec map[string]any) call {
		return func(ctx context.Context, p *Plugin) error {
			_, err := p.Reconcile(ctx, &fakeSession{}, nil, crRequest("bad", spec))
			return err
		}
	}
	cases := []struct {
		name  string
		guest string
		env   []string
		opts  func(*Options)
		call  call
		entry string
		kind  string
		want  string
		// output is what the guest printed and the host must log.
		output string
	}{
		{name: "panic in reconcile", guest: "pdkmock", call: reconcile(map[string]any{"action": "panic"}),
			entry: "reconcile", kind: "panic", want: "mock plugin panics on purpose", output: "goroutine"},
		{name: "panic in wait_for_api", guest: "pdkmock", env: []string{"MOCK_WAIT_MODE=panic"},
			call:  func(ctx context.Context, p *Plugin) error { return p.WaitForAPI(ctx, &fakeSession{}) },
			entry: "wait_for_api", kind: "panic", want: "mock plugin panics on purpose"},
		{name: "panic in prune", guest: "pdkmock", env: []string{"MOCK_PRUNE_MODE=panic"},
			call: func(ctx context.Context, p *Plugin) error {
				return p.Prune(ctx, &fakeSession{}, plugin.PruneRequest{})
			},
			entry: "prune", kind: "panic", want: "mock plugin panics on purpose"},
		// Only the looping call gets the short deadline: on a loaded machine starting an instance
		// alone can take longer than 300 ms, which is not what this case is about.
		{name: "infinite loop", guest: "pdkmock", call: func(ctx context.Context, p *Plugin) error {
			cache, err := p.NewCache(ctx)
			require.NoError(t, err)
			defer cache.Close(ctx)
			long := p.opts.CallTimeout
			p.opts.CallTimeout = 300 * time.Millisecond
			defer func() { p.opts.CallTimeout = long }()
			_, err = p.Reconcile(ctx, &fakeSession{}, cache, crRequest("bad", map[string]any{"action": "loop"}))
			return err
		}, entry: "reconcile", kind: "timeout", want: "did not finish within 300ms"},
		{name: "memory hog", guest: "pdkmock", opts: func(o *Options) { o.MemoryLimitPages = 160 },
			call: reconcile(map[string]any{"action": "hog"}), entry: "reconcile", kind: "out of memory",
			want: "memory limit of 10 MiB"},
		{name: "malformed JSON output", guest: "rawmock",
			call: reconcile(map[string]any{"mode": "bad-json"}), entry: "reconcile", kind: "protocol", want: "output is not a valid result message"},
		{name: "oversized output", guest: "rawmock",
			call: reconcile(map[string]any{"mode": "huge"}), entry: "reconcile", kind: "abi", want: "exceed the output limit of 1048576 bytes"},
		{name: "wild kernel offset", guest: "rawmock",
			call: reconcile(map[string]any{"mode": "wild-offset"}), entry: "reconcile", kind: "abi", want: "load_u64: offset 1099511627776"},
		{name: "bulk copy into memory the guest does not have", guest: "rawmock",
			call: reconcile(map[string]any{"mode": "wild-input-read"}), entry: "reconcile", kind: "abi", want: "input_read: guest memory [4294967280,"},
		{name: "bulk copy from memory the guest does not have", guest: "rawmock",
			call: reconcile(map[string]any{"mode": "wild-block-write"}), entry: "reconcile", kind: "abi", want: "block_write: guest memory [4294967280,"},
		{name: "bulk copy of a block that does not exist", guest: "rawmock",
			call: reconcile(map[string]any{"mode": "wild-block-read"}), entry: "reconcile", kind: "abi", want: "block_read: offset 1099511627776 is not the start"},
		{name: "evidence outside the guest's memory", guest: "rawmock",
			call: reconcile(map[string]any{"mode": "wild-evidence"}), entry: "reconcile", kind: "abi", want: "unchanged: guest memory [4294967280,"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			o, logs := testOptions(t, c.env...)
			if c.opts != nil {
				c.opts(&o)
			}
			p := loadTest(t, guest(t, c.guest), o)
			before := p.nextID.Load()

			err := c.call(ctx, p)
			require.Error(t, err)
			var ce *CallError
			require.True(t, errors.As(err, &ce), "want a *CallError, got %T: %v", err, err)
			assert.Equal(t, c.kind, ce.Kind)
			assert.Contains(t, err.Error(), `wasm plugin "`+p.name+`" `+c.entry+": ")
			assert.Contains(t, err.Error(), c.want)
			if c.output != "" {
				assert.Contains(t, logs.String(), c.output, "the guest's output is logged")
			}

			spec := map[string]any{"action": "echo", "name": "next"}
			res, err := p.Reconcile(ctx, &fakeSession{}, nil, crRequest("next", spec))
			require.NoError(t, err, "the call after a failure works")
			if c.guest == "pdkmock" {
				assert.Equal(t, []string{"next"}, res.Notes)
			}
			assert.Greater(t, p.nextID.Load(), before, "the failed instance was replaced by a fresh one")
		})
	}
}

func TestPanicsInGroupEntryPoints(t *testing.T) {
	ctx := context.Background()
	o, _ := testOptions(t, "RAW_PANIC_IN=group_begin")
	p := loadTest(t, guest(t, "rawmock"), o)
	_, err := p.NewCache(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `wasm plugin "rawmock" group_begin: panic: rawmock panics in group_begin`)
	before := p.nextID.Load()
	require.NoError(t, p.WaitForAPI(ctx, &fakeSession{}), "the host survives and serves the next call")
	assert.Greater(t, p.nextID.Load(), before, "on a fresh instance")

	o, _ = testOptions(t, "RAW_PANIC_IN=group_end")
	p = loadTest(t, guest(t, "rawmock"), o)
	cache, err := p.NewCache(ctx)
	require.NoError(t, err)
	res, err := p.Reconcile(ctx, &fakeSession{}, cache, crRequest("a", map[string]any{}))
	require.NoError(t, err)
	assert.Equal(t, []string{"raw ok"}, res.Notes)
	err = cache.Close(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `wasm plugin "rawmock" group_end: panic: rawmock panics in group_end`)
	before = p.nextID.Load()
	require.NoError(t, p.WaitForAPI(ctx, &fakeSession{}))
	assert.Greater(t, p.nextID.Load(), before, "the instance that failed group_end was not reused")
}

func TestGuestOutputIsBounded(t *testing.T) {
	o, logs := testOptions(t)
	p := loadTest(t, guest(t, "rawmock"), o)
	res, err := p.Reconcile(context.Background(), &fakeSession{}, nil, crRequest("a", map[string]any{"mode": "chatty"}))
	require.NoError(t, err)
	assert.Equal(t, []string{"said a lot"}, res.Notes)
	assert.Contains(t, logs.String(), "dropped_bytes=", "output past the capture limit is counted, not kept")
	assert.Less(t, len(logs.String()), 2*outputCaptureBytes, "the host holds at most the capture limit")
}

func TestGuestLogIsBounded(t *testing.T) {
	o, logs := testOptions(t)
	p := loadTest(t, guest(t, "rawmock"), o)
	res, err := p.Reconcile(context.Background(), &fakeSession{}, nil, crRequest("a", map[string]any{"mode": "log-flood"}))
	require.NoError(t, err, "a chatty plugin is not a failing one")
	assert.Equal(t, []string{"logged a lot"}, res.Notes)
	assert.Contains(t, logs.String(), "more bytes cut)", "one huge message is cut")
	assert.Contains(t, logs.String(), `msg="plugin log messages dropped: the call logged more than its budget" plugin=rawmock kind=Mock cr=ns/a entry=reconcile dropped_messages=`)
	assert.Less(t, len(logs.String()), 2*kernel.DefaultLogBytes, "the host logs at most the call's budget, not 64 MB")
}

func TestPanicTextIsLoggedWithThePluginName(t *testing.T) {
	o, logs := testOptions(t)
	p := loadTest(t, guest(t, "pdkmock"), o)
	_, err := p.Reconcile(context.Background(), &fakeSession{}, nil, crRequest("bad", map[string]any{"action": "panic"}))
	require.Error(t, err)
	assert.Regexp(t, `level=ERROR msg="plugin wrote to stdout/stderr" plugin=mock kind=Mock cr=ns/bad entry=reconcile output="panic: mock plugin panics on purpose`, logs.String())
}

func TestCallOutsideTheGrantIsRefusedAndLogged(t *testing.T) {
	ctx := context.Background()
	o, logs := testOptions(t)
	p := loadTest(t, guest(t, "pdkmock"), o)
	s := &fakeSession{}
	_, err := p.Reconcile(ctx, s, nil, crRequest("g", map[string]any{"action": "outside-grant"}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "DELETE network v2.0/networks/x: no path pattern the plugin declares for service network matches (v2.0/things, v2.0/things/*)")
	assert.True(t, plugin.IsPermanent(err), "a missing grant will not appear on retry")
	assert.Empty(t, s.Requests(), "a refused call never reaches OpenStack")
	assert.Contains(t, logs.String(), `msg="OpenStack request refused" plugin=mock kind=Mock cr=ns/g`)

	// The refusal is an error the plugin reported, not a broken sandbox: the group keeps its
	// instance.
	cache, err := p.NewCache(ctx)
	require.NoError(t, err)
	defer cache.Close(ctx)
	_, err = p.Reconcile(ctx, s, cache, crRequest("g", map[string]any{"action": "outside-grant"}))
	require.Error(t, err)
	before := p.nextID.Load()
	_, err = p.Reconcile(ctx, s, cache, crRequest("g", map[string]any{"name": "g"}))
	require.NoError(t, err)
	assert.Equal(t, before, p.nextID.Load())
}

// The mock requests v2.0/things/<name> under the grant v2.0/things/*: a name that the server
// would decode into another path must not pass as one segment.
func TestEncodedPathTricksDoNotEscapeAGrant(t *testing.T) {
	o, _ := testOptions(t)
	p := loadTest(t, guest(t, "pdkmock"), o)
	for name, why := range map[string]string{
		"%2e%2e":                 `segment "%2e%2e" is ".." once decoded`,
		"%2E%2E%2Fnetworks":      `segment "%2E%2E%2Fnetworks" holds an encoded slash or backslash`,
		"x%2f..%2f..%2fidentity": `segment "x%2f..%2f..%2fidentity" holds an encoded slash or backslash`,
		"a%5cb":                  `segment "a%5cb" holds an encoded slash or backslash`,
	} {
		s := &fakeSession{}
		_, err := p.Reconcile(context.Background(), s, nil, crRequest("trick", map[string]any{"name": name}))
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "GET network v2.0/things/"+name+": unsafe path: "+why, "the refusal names the segment and the rule")
		assert.Empty(t, s.Requests(), "%s: a refused call never reaches OpenStack", name)
	}
}

func TestOperatorGrantsNarrowTheDeclaredOnes(t *testing.T) {
	ctx := context.Background()
	o, _ := testOptions(t, `MOCK_GRANTS=[{"service":"network","methods":["GET"],"paths":["v2.0/things/*"]}]`)
	p := loadTest(t, guest(t, "pdkmock"), o)
	s := &fakeSession{}
	_, err := p.Reconcile(ctx, s, nil, crRequest("a", map[string]any{"name": "a"}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "POST network v2.0/things: no path pattern the operator allows for service network matches (v2.0/things/*)")
	require.Len(t, s.Requests(), 1, "the GET was allowed, the POST refused")

	o.Grants = []grant.Grant{{Service: "network", Methods: []string{"GET", "POST"}, Paths: []string{"v2.0/things", "v2.0/things/*"}}}
	p = loadTest(t, guest(t, "pdkmock"), o)
	_, err = p.Reconcile(ctx, &fakeSession{}, nil, crRequest("a", map[string]any{"name": "a"}))
	require.NoError(t, err, "Options.Grants overrides the variable")

	o.Grants = nil
	for _, bad := range []string{`[{"service":"network"}]`, ``, ` `} {
		o.LookupEnv = lookupIn([]string{`MOCK_GRANTS=` + bad})
		_, err = load(ctx, guest(t, "pdkmock"), o.withDefaults())
		require.Error(t, err, "MOCK_GRANTS=%q: an operator's narrowing that cannot be read fails closed", bad)
		assert.Contains(t, err.Error(), "MOCK_GRANTS is invalid")
	}
}

func TestPlainTextGuestErrorsAreTheirOwnMessage(t *testing.T) {
	ctx := context.Background()
	o, _ := testOptions(t)
	p := loadTest(t, guest(t, "rawmock"), o)
	_, err := p.Reconcile(ctx, &fakeSession{}, nil, crRequest("a", map[string]any{"mode": "plain-error"}))
	assert.EqualError(t, err, "plain text failure")

	_, err = p.Reconcile(ctx, &fakeSession{}, nil, crRequest("a", map[string]any{"mode": "error-without-message"}))
	assert.EqualError(t, err, `wasm plugin "rawmock" reconcile: failed without an error message`)
}

// A guest's reason becomes the CR's condition reason: one that is huge or not a word is dropped
// (and logged), the message kept.
func TestGuestReasonsAreBounded(t *testing.T) {
	ctx := context.Background()
	o, logs := testOptions(t)
	p := loadTest(t, guest(t, "rawmock"), o)
	for mode, msg := range map[string]string{"bad-reasons": "long reason", "newline-reason": "odd reason"} {
		_, err := p.Reconcile(ctx, &fakeSession{}, nil, crRequest("a", map[string]any{"mode": mode}))
		require.EqualError(t, err, msg, mode)
		assert.Empty(t, plugin.Reason(err), mode)
	}
	assert.Contains(t, logs.String(), "plugin error reason dropped")
	assert.Less(t, len(logs.String()), 64<<10, "the dropped reason is logged cut")
}

// The promise to operators: a plugin sees none of the host's environment and no arguments,
// whatever the host process has; its only variables are the ones the host sets for a Go runtime
// (GOMEMLIMIT, from the sandbox's size, and GOGC). Files and sockets cannot even be imported
// (TestStructurallyBadModulesAreRefusedBeforeInstantiation).
func TestGuestSeesNoEnvironmentFilesOrNetwork(t *testing.T) {
	t.Setenv("OS_PASSWORD", "canary")
	o, _ := testOptions(t)
	o.LookupEnv = os.LookupEnv
	p := loadTest(t, guest(t, "rawmock"), o)
	res, err := p.Reconcile(context.Background(), &fakeSession{}, nil, crRequest("a", map[string]any{"mode": "sandbox"}))
	require.NoError(t, err)
	assert.Equal(t, []string{`env=["GOMEMLIMIT=` + guestMemoryLimit(DefaultMemoryLimitPages) + `" "GOGC=` + GuestGCPercent + `"]`, "args=[]"}, res.Notes)
}

// A guest's sleep must reach the host in short slices: a sleep that returned at once made a Go
// guest spin a CPU for the whole duration, and one slept whole could not be stopped at the deadline.
func TestGuestSleepWaitsInShortSlices(t *testing.T) {
	var mu sync.Mutex
	var slices []time.Duration
	sleep = func(d time.Duration) {
		mu.Lock()
		slices = append(slices, d)
		mu.Unlock()
		time.Sleep(d)
	}
	t.Cleanup(func() { sleep = time.Sleep })
	o, _ := testOptions(t)
	p := loadTest(t, guest(t, "rawmock"), o)
	res, err := p.Reconcile(context.Background(), &fakeSession{}, nil, crRequest("a", map[string]any{"mode": "sleep", "millis": 50}))
	require.NoError(t, err)
	assert.Equal(t, []string{"slept"}, res.Notes)
	mu.Lock()
	seen := append([]time.Duration(nil), slices...)
	mu.Unlock()
	require.NotEmpty(t, seen, "the guest's time.Sleep waits in the host, not in a spin")
	assert.LessOrEqual(t, seen[0], sleepSlice)
	assert.LessOrEqual(t, seen[len(seen)-1], sleepSlice)

	o.CallTimeout = 200 * time.Millisecond
	p = loadTest(t, guest(t, "rawmock"), o)
	_, err = p.Reconcile(context.Background(), &fakeSession{}, nil, crRequest("a", map[string]any{"mode": "sleep", "millis": 3600_000}))
	var ce *CallError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "timeout", ce.Kind, "a guest sleeping past its deadline is stopped")
}

// What a guest sends ends up in the host's log (a refused request's path, the error the runner
// logs for a CR): a megabyte of it must not become a megabyte-long log line.
func TestHugeGuestStringsDoNotReachTheLog(t *testing.T) {
	ctx := context.Background()
	o, logs := testOptions(t)
	p := loadTest(t, guest(t, "rawmock"), o)

	res, err := p.Reconcile(ctx, &fakeSession{}, nil, crRequest("a", map[string]any{"mode": "long-path"}))
	require.NoError(t, err)
	require.Len(t, res.Notes, 1)
	assert.Contains(t, res.Notes[0], `"kind":"invalid_request"`)
	assert.Contains(t, res.Notes[0], "path of 1048581 bytes exceeds the limit of 4096 bytes")

	_, err = p.Reconcile(ctx, &fakeSession{}, nil, crRequest("a", map[string]any{"mode": "huge-error"}))
	require.Error(t, err)
	assert.Less(t, len(err.Error()), 5<<10, "the error the runner logs and stores is cut")
	assert.True(t, strings.HasSuffix(err.Error(), "more bytes cut)"), "and says so")
	assert.Less(t, len(logs.String()), 64<<10)

	_, err = p.Reconcile(ctx, &fakeSession{}, nil, crRequest("a", map[string]any{"mode": "refused-loop"}))
	require.NoError(t, err)
	assert.Equal(t, maxRefusalLogs, strings.Count(logs.String(), `msg="OpenStack request refused"`),
		"a guest retrying a refused request in a loop is logged a few times")
	assert.Contains(t, logs.String(), `msg="more OpenStack requests refused than logged" plugin=rawmock kind=Mock cr=ns/a entry=reconcile refused=1000 logged=5`)
}

func TestPanicDuringInitializeRefusesTheLoad(t *testing.T) {
	o, logs := testOptions(t)
	path := guest(t, "initpanic")
	_, err := Load(context.Background(), path, o)
	require.Error(t, err)
	var le *LoadError
	require.ErrorAs(t, err, &le)
	assert.Contains(t, err.Error(), path)
	assert.Contains(t, err.Error(), `_initialize: panic: pdk.Register: plugin "initpanic": Metadata.EnvPrefix is empty`)
	assert.Contains(t, logs.String(), "goroutine 1")
}

// blockingSession never answers: only the call's deadline ends a request to it.
type blockingSession struct{}

func (blockingSession) Do(ctx context.Context, _ plugin.Request) (*plugin.Response, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func TestDeadlineReachesOpenStackRequests(t *testing.T) {
	o, _ := testOptions(t)
	o.CallTimeout = 200 * time.Millisecond
	p := loadTest(t, guest(t, "pdkmock"), o)
	_, err := p.Reconcile(context.Background(), blockingSession{}, nil, crRequest("slow", map[string]any{"name": "slow"}))
	require.Error(t, err)
	var ce *CallError
	require.ErrorAs(t, err, &ce, "a guest that returns after its deadline is stopped, not trusted")
	assert.Equal(t, "timeout", ce.Kind)
	assert.Contains(t, err.Error(), `wasm plugin "mock" reconcile: timeout: did not finish within 200ms`)
}

// Sandbox stops are counted by kind and carried on the error, so the runner can record a
// SandboxRefused Event: a refused grant ("grant"), a panic ("trap").
func TestSandboxRefusalsAreCountedAndMarked(t *testing.T) {
	ctx := context.Background()
	o, _ := testOptions(t)
	rec := metrics.NewFile()
	o.Metrics = rec
	p := loadTest(t, guest(t, "pdkmock"), o)
	_, err := p.Reconcile(ctx, &fakeSession{}, nil, crRequest("g", map[string]any{"action": "outside-grant"}))
	require.Error(t, err)
	assert.Equal(t, "grant", plugin.SandboxRefusal(err))
	_, err = p.Reconcile(ctx, &fakeSession{}, nil, crRequest("bad", map[string]any{"action": "panic"}))
	require.Error(t, err)
	assert.Equal(t, "trap", plugin.SandboxRefusal(err))

	path := filepath.Join(t.TempDir(), "metrics.json")
	require.NoError(t, rec.Flush(path, "g"))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, want := range []string{
		`"name":"openstack_sync_sandbox_refusals_total","group":"g","action":"add","value":1,"labels":{"kind":"grant","plugin":"mock"}`,
		`"name":"openstack_sync_sandbox_refusals_total","group":"g","action":"add","value":1,"labels":{"kind":"trap","plugin":"mock"}`,
		`"name":"openstack_sync_plugin_compile_duration_seconds_count","group":"g","action":"add","value":1,"labels":{"cache":`,
	} {
		assert.Contains(t, string(data), want)
	}
}
