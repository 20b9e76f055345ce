package shelloperator

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/openstack-sync/openstack-sync/host/internal/fakekube"
)

const (
	ns        = "openstack"
	finalizer = "openstack-sync.io/finalizer"
)

// The test binary doubles as the hook: shell-operator runs executables, so the simulator is tested
// against a real subprocess that reads BINDING_CONTEXT_PATH and writes through KUBECONFIG.
func TestMain(m *testing.M) {
	if os.Getenv("SHELLOP_TEST_HOOK") == "1" {
		os.Exit(testHook())
	}
	os.Exit(m.Run())
}

func testHook() int {
	if len(os.Args) > 1 && os.Args[len(os.Args)-1] == "--config" {
		data, err := os.ReadFile(os.Getenv("SHELLOP_TEST_CONFIG"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		_, _ = os.Stdout.Write(data)
		return 0
	}
	data, err := os.ReadFile(os.Getenv("BINDING_CONTEXT_PATH"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var contexts []map[string]any
	if err := json.Unmarshal(data, &contexts); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	log, err := os.OpenFile(os.Getenv("SHELLOP_TEST_LOG"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	line, _ := json.Marshal(contexts)
	_, _ = fmt.Fprintf(log, "%s\n", line)
	_ = log.Close()
	if os.Getenv("SHELLOP_TEST_FINALIZE") == "1" {
		if err := finalize(contexts); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	fmt.Fprintf(os.Stderr, "kubeconfig=%s\n", os.Getenv("KUBECONFIG"))
	code, _ := strconv.Atoi(os.Getenv("SHELLOP_TEST_EXIT"))
	return code
}

// finalize adds the finalizer to live objects and releases it from terminating ones, with the
// framework's patch forms, so the simulator's event feedback can be observed.
func finalize(contexts []map[string]any) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		return err
	}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	r, err := fakekube.ParseCRDFile("testdata/crds/widgets.yaml")
	if err != nil {
		return err
	}
	var objects []map[string]any
	for _, c := range contexts {
		if o, ok := c["object"].(map[string]any); ok {
			objects = append(objects, o)
		}
		items, _ := c["objects"].([]any)
		for _, it := range items {
			objects = append(objects, it.(map[string]any)["object"].(map[string]any))
		}
	}
	for _, o := range objects {
		meta := o["metadata"].(map[string]any)
		fins, _ := meta["finalizers"].([]any)
		var patch string
		switch {
		case meta["deletionTimestamp"] != nil && len(fins) == 1:
			patch = fmt.Sprintf(`[{"op":"test","path":"/metadata/finalizers/0","value":%q},{"op":"remove","path":"/metadata/finalizers/0"}]`, finalizer)
		case meta["deletionTimestamp"] == nil && len(fins) == 0:
			patch = fmt.Sprintf(`[{"op":"test","path":"/metadata/resourceVersion","value":%q},{"op":"add","path":"/metadata/finalizers","value":[%q]}]`, meta["resourceVersion"], finalizer)
		default:
			continue
		}
		_, err := client.Resource(r.GVR()).Namespace(meta["namespace"].(string)).
			Patch(context.Background(), meta["name"].(string), types.JSONPatchType, []byte(patch), metav1.PatchOptions{})
		if err != nil {
			fmt.Fprintf(os.Stderr, "patch %s: %v\n", meta["name"], err)
		}
	}
	return nil
}

type fixture struct {
	kube    *fakekube.Server
	widgets fakekube.Resource
	log     string
	hook    Hook
	dir     string
}

func newFixture(t *testing.T, config string, env ...string) fixture {
	t.Helper()
	crds, err := fakekube.LoadCRDs("testdata/crds")
	require.NoError(t, err)
	kube, err := fakekube.Start(crds...)
	require.NoError(t, err)
	t.Cleanup(kube.Close)
	dir := t.TempDir()
	self, err := os.Executable()
	require.NoError(t, err)
	cfg, err := filepath.Abs(config)
	require.NoError(t, err)
	f := fixture{kube: kube, widgets: crds[0], log: filepath.Join(dir, "hook.log"), dir: dir}
	f.hook = Hook{Command: []string{self}, Env: append([]string{
		"SHELLOP_TEST_HOOK=1", "SHELLOP_TEST_CONFIG=" + cfg, "SHELLOP_TEST_LOG=" + f.log,
	}, env...)}
	return f
}

func (f fixture) simulator(t *testing.T) *Simulator {
	t.Helper()
	kc := filepath.Join(f.dir, "kubeconfig")
	require.NoError(t, f.kube.WriteKubeconfig(kc))
	s, err := New(context.Background(), f.kube, f.hook, kc, f.dir)
	require.NoError(t, err)
	return s
}

func (f fixture) create(t *testing.T, namespace, name string) {
	t.Helper()
	_, err := f.kube.Create(f.widgets, namespace, map[string]any{
		"metadata": map[string]any{"name": name}, "spec": map[string]any{"size": 1},
	})
	require.NoError(t, err)
}

// received returns the binding-context arrays the hook read, one per run.
func (f fixture) received(t *testing.T) [][]map[string]any {
	t.Helper()
	file, err := os.Open(f.log)
	require.NoError(t, err)
	defer file.Close()
	var out [][]map[string]any
	sc := bufio.NewScanner(file)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var contexts []map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &contexts))
		out = append(out, contexts)
	}
	return out
}

func names(items any) []string {
	var out []string
	for _, it := range items.([]any) {
		m := it.(map[string]any)
		meta := m["object"].(map[string]any)["metadata"].(map[string]any)
		out = append(out, meta["namespace"].(string)+"/"+meta["name"].(string))
		if !assertSameJSON(m["object"], m["filterResult"]) {
			out = append(out, "filterResult differs from object")
		}
	}
	return out
}

func assertSameJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

func TestParseConfig(t *testing.T) {
	c, err := ParseConfig(mustRead(t, "testdata/config-enabled.json"))
	require.NoError(t, err)
	require.Len(t, c.Kubernetes, 1)
	assert.Equal(t, "widgets", c.Kubernetes[0].queue())
	assert.True(t, c.Kubernetes[0].keepFullObjects(), "shell-operator keeps full objects unless told otherwise")
	assert.True(t, c.Kubernetes[0].watches(ns))
	assert.False(t, c.Kubernetes[0].watches("elsewhere"))
	assert.Equal(t, "periodic sync", c.Schedule[0].Name)

	c, err = ParseConfig(mustRead(t, "testdata/config-disabled.json"))
	require.NoError(t, err)
	assert.Equal(t, 10, *c.OnStartup)
}

func TestParseConfigRejects(t *testing.T) {
	tests := map[string]string{
		"version.json":          `configVersion is "v0"`,
		"no-binding.json":       "no binding",
		"jq-filter.json":        `jqFilter ".spec" is not simulated`,
		"unknown-snapshot.json": `includes snapshots from "x"`,
		"empty-crontab.json":    "needs a name and a crontab",
		"event-type.json":       `unknown event type "Updated"`,
		"not-json.json":         "not a JSON hook configuration",
	}
	for file, want := range tests {
		t.Run(file, func(t *testing.T) {
			_, err := ParseConfig(mustRead(t, filepath.Join("testdata/badconfig", file)))
			require.Error(t, err)
			assert.Contains(t, err.Error(), want)
		})
	}
}

func TestNewRejectsAnUnservedBinding(t *testing.T) {
	kube, err := fakekube.Start()
	require.NoError(t, err)
	defer kube.Close()
	self, err := os.Executable()
	require.NoError(t, err)
	cfg, _ := filepath.Abs("testdata/config-enabled.json")
	_, err = New(context.Background(), kube, Hook{Command: []string{self}, Env: []string{"SHELLOP_TEST_HOOK=1", "SHELLOP_TEST_CONFIG=" + cfg}}, "kc", t.TempDir())
	require.ErrorContains(t, err, `binding "widgets" watches test.openstack-sync.io/v1alpha1 Widget, which the API does not serve`)
}

func TestSynchronizationCarriesObjectsAndSnapshots(t *testing.T) {
	f := newFixture(t, "testdata/config-enabled.json")
	f.create(t, ns, "b")
	f.create(t, ns, "a")
	f.create(t, "elsewhere", "c")
	s := f.simulator(t)

	runs, err := s.Synchronization(context.Background())
	require.NoError(t, err)
	require.Len(t, runs, 1)
	assert.Equal(t, 0, runs[0].ExitCode)
	assert.Equal(t, "widgets", runs[0].Queue)
	assert.Contains(t, runs[0].Stderr, "kubeconfig="+filepath.Join(f.dir, "kubeconfig"))

	got := f.received(t)
	require.Len(t, got, 1)
	require.Len(t, got[0], 1)
	c := got[0][0]
	assert.Equal(t, "widgets", c["binding"])
	assert.Equal(t, "Synchronization", c["type"])
	assert.Equal(t, []string{"openstack/a", "openstack/b"}, names(c["objects"]), "sorted, namespace-filtered, object == filterResult for jqFilter \".\"")
	assert.Equal(t, []string{"openstack/a", "openstack/b"}, names(c["snapshots"].(map[string]any)["widgets"]))
	assert.Zero(t, s.Pending(), "events before the synchronization are covered by it")
}

func TestEventsFeedBackTheHooksOwnWrites(t *testing.T) {
	f := newFixture(t, "testdata/config-enabled.json", "SHELLOP_TEST_FINALIZE=1")
	s := f.simulator(t)
	ctx := context.Background()
	_, err := s.Synchronization(ctx)
	require.NoError(t, err)

	type delivery struct {
		Event string
		Name  string
		Term  bool
		Snap  []string
	}
	deliver := func() []delivery {
		t.Helper()
		before := len(f.received(t))
		runs, err := s.Events(ctx)
		require.NoError(t, err)
		var out []delivery
		for _, run := range f.received(t)[before:] {
			for _, c := range run {
				require.Equal(t, "Event", c["type"])
				meta := c["object"].(map[string]any)["metadata"].(map[string]any)
				out = append(out, delivery{
					Event: c["watchEvent"].(string), Name: meta["name"].(string),
					Term: meta["deletionTimestamp"] != nil, Snap: names(c["snapshots"].(map[string]any)["widgets"]),
				})
			}
		}
		assert.LessOrEqual(t, len(runs), 1, "one queue, one coalesced run")
		return out
	}

	f.create(t, ns, "a")
	f.create(t, "elsewhere", "ignored")
	assert.Equal(t, []delivery{{Event: "Added", Name: "a", Snap: []string{"openstack/a"}}}, deliver())
	// The hook added the finalizer: that write is the next run's event.
	assert.Equal(t, []delivery{{Event: "Modified", Name: "a", Snap: []string{"openstack/a"}}}, deliver())
	assert.Empty(t, deliver())

	_, _, err = f.kube.Delete(f.widgets, ns, "a", fakekube.DeleteOptions{})
	require.NoError(t, err)
	assert.Equal(t, []delivery{{Event: "Modified", Name: "a", Term: true, Snap: []string{"openstack/a"}}}, deliver())
	// The hook released the finalizer, so the object went.
	assert.Equal(t, []delivery{{Event: "Deleted", Name: "a", Term: true, Snap: nil}}, deliver())
	assert.Empty(t, deliver())
}

func TestEventsOfOneQueueCoalesceIntoOneRun(t *testing.T) {
	f := newFixture(t, "testdata/config-enabled.json")
	s := f.simulator(t)
	ctx := context.Background()
	_, err := s.Synchronization(ctx)
	require.NoError(t, err)
	f.create(t, ns, "a")
	f.create(t, ns, "b")
	assert.Equal(t, 2, s.Pending())
	runs, err := s.Events(ctx)
	require.NoError(t, err)
	require.Len(t, runs, 1)
	assert.Equal(t, "Event Added openstack/a, Event Added openstack/b", runs[0].Describe())
	got := f.received(t)
	require.Len(t, got, 2)
	require.Len(t, got[1], 2)
	// Snapshots are taken when the hook runs, so both contexts see both objects.
	for _, c := range got[1] {
		assert.Equal(t, []string{"openstack/a", "openstack/b"}, names(c["snapshots"].(map[string]any)["widgets"]))
	}
}

func TestScheduleAndExitCode(t *testing.T) {
	f := newFixture(t, "testdata/config-enabled.json", "SHELLOP_TEST_EXIT=3")
	f.create(t, ns, "a")
	s := f.simulator(t)
	run, err := s.Schedule(context.Background(), "periodic sync")
	require.NoError(t, err)
	assert.Equal(t, 3, run.ExitCode)
	got := f.received(t)
	require.Len(t, got, 1)
	c := got[0][0]
	assert.Equal(t, "periodic sync", c["binding"])
	assert.Equal(t, "Schedule", c["type"])
	assert.Equal(t, []string{"openstack/a"}, names(c["snapshots"].(map[string]any)["widgets"]))

	_, err = s.Schedule(context.Background(), "nightly")
	require.ErrorContains(t, err, `no schedule binding "nightly"`)
}

func TestStartup(t *testing.T) {
	f := newFixture(t, "testdata/config-disabled.json")
	s := f.simulator(t)
	run, err := s.Startup(context.Background())
	require.NoError(t, err)
	require.NotNil(t, run)
	assert.Equal(t, [][]map[string]any{{{"binding": "onStartup"}}}, f.received(t))
	runs, err := s.Synchronization(context.Background())
	require.NoError(t, err)
	assert.Empty(t, runs, "no kubernetes binding, no synchronization")
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return data
}

func TestWithoutJQFilterAndWithoutFullObjects(t *testing.T) {
	f := newFixture(t, "testdata/config-nofilter.json")
	f.create(t, ns, "a")
	s := f.simulator(t)
	ctx := context.Background()
	runs, err := s.Synchronization(ctx)
	require.NoError(t, err)
	require.Len(t, runs, 1, "the thin binding does not synchronize")
	assert.Equal(t, "main", runs[0].Queue, "a binding without a queue uses shell-operator's main queue")

	// Without a jqFilter the checksum covers the whole object, so a metadata change fires.
	_, err = f.kube.Patch(f.widgets, ns, "a", "", fakekube.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`))
	require.NoError(t, err)
	f.create(t, ns, "b")
	runs, err = s.Events(ctx)
	require.NoError(t, err)
	require.Len(t, runs, 2, "one run per queue")
	assert.Equal(t, "Event Modified openstack/a", runs[0].Describe())
	c := runs[0].Contexts[0]
	assert.Contains(t, c, "object")
	assert.NotContains(t, c, "filterResult", "no jqFilter, no filterResult")
	assert.Equal(t, "thin", runs[1].Queue)
	thin := runs[1].Contexts[0]
	assert.NotContains(t, thin, "object", "keepFullObjectsInMemory: false drops the object")
	assert.Equal(t, "b", thin["filterResult"].(map[string]any)["metadata"].(map[string]any)["name"])
	assert.NotContains(t, thin, "snapshots")
	assert.Equal(t, "Event Added openstack/b", runs[1].Describe())
}

func TestDescribe(t *testing.T) {
	tests := []struct {
		contexts []map[string]any
		want     string
	}{
		{[]map[string]any{{"binding": "onStartup"}}, "onStartup"},
		{[]map[string]any{{"binding": "w", "type": "Synchronization", "objects": []any{map[string]any{}}}}, "Synchronization w (1 object)"},
		{[]map[string]any{{"binding": "w", "type": "Synchronization", "objects": []any{}}}, "Synchronization w (0 objects)"},
		{[]map[string]any{{"binding": "periodic sync", "type": "Schedule"}}, "Schedule periodic sync"},
		{[]map[string]any{
			{"binding": "w", "type": "Event", "watchEvent": "Modified", "object": map[string]any{"metadata": map[string]any{"namespace": "n", "name": "a", "deletionTimestamp": "2026-01-01T00:00:00Z"}}},
			{"binding": "w", "type": "Event", "watchEvent": "Added", "filterResult": map[string]any{"metadata": map[string]any{"namespace": "n", "name": "b"}}},
		}, "Event Modified n/a (deletionTimestamp set), Event Added n/b"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, (&Run{Contexts: tt.contexts}).Describe())
	}
}
