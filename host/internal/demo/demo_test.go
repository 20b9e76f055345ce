package demo

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/openstack-sync/openstack-sync/host/internal/fakecloud"
	"github.com/openstack-sync/openstack-sync/host/internal/fakekube"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/resource"
)

func TestLoadExamples(t *testing.T) {
	got, err := loadExamples("testdata/examples")
	require.NoError(t, err)
	var ids []string
	for _, ex := range got {
		ids = append(ids, ex.File+":"+ex.kind()+"/"+ex.name())
	}
	assert.Equal(t, []string{
		"10-secret.yaml:Secret/cloud-credentials",
		"20-widgets.yaml:Widget/small",
		"20-widgets.yaml:ConfigMap/unrelated",
	}, ids, "comment-only documents are skipped")

	_, err = loadExamples("testdata/badexamples")
	require.ErrorContains(t, err, "no-kind.yaml document 1 has no kind")
	_, err = loadExamples(t.TempDir())
	require.ErrorContains(t, err, "no *.yaml file")
}

func TestRewriteCloudsYAML(t *testing.T) {
	fake := fakecloud.New(fakecloud.Options{})
	defer fake.Close()
	examples, err := loadExamples("testdata/examples")
	require.NoError(t, err)
	text, ok := secretCloudsYAML(examples[0].Object)
	require.True(t, ok)

	got, notes, err := rewriteCloudsYAML(text, fake.CloudsYAML(), fakecloud.SystemCloud, fakecloud.AdminCloud)
	require.NoError(t, err)
	var parsed, fk struct {
		Clouds map[string]map[string]any `json:"clouds"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(got), &parsed))
	require.NoError(t, yaml.Unmarshal([]byte(fake.CloudsYAML()), &fk))
	assert.Equal(t, fk.Clouds[fakecloud.AdminCloud], parsed.Clouds["prod"])
	assert.Equal(t, fk.Clouds[fakecloud.SystemCloud], parsed.Clouds["prod-system"], "a system-scoped entry keeps its scope")
	assert.Equal(t, fk.Clouds[fakecloud.MemberCloud], parsed.Clouds[fakecloud.MemberCloud], "an entry named like a fake cloud gets that cloud")
	assert.Equal(t, fk.Clouds[fakecloud.SystemCloud], parsed.Clouds[fakecloud.SystemCloud], "the fake's own entries stay usable")
	assert.NotContains(t, got, "keystone.example.com", "nothing may point outside the machine")
	assert.Equal(t, []string{`cloud "local-demo" -> in-process local-demo`, `cloud "prod" -> in-process local-admin`, `cloud "prod-system" -> in-process local-system`}, notes)

	_, _, err = rewriteCloudsYAML("clouds: {}\n", fake.CloudsYAML(), fakecloud.SystemCloud, fakecloud.AdminCloud)
	require.ErrorContains(t, err, "has no clouds")
	_, _, err = rewriteCloudsYAML("clouds: [", fake.CloudsYAML(), fakecloud.SystemCloud, fakecloud.AdminCloud)
	require.ErrorContains(t, err, "example clouds.yaml")
}

func TestSeed(t *testing.T) {
	fake := fakecloud.New(fakecloud.Options{})
	defer fake.Close()
	crds, err := fakekube.LoadCRDs("testdata/crds")
	require.NoError(t, err)
	kube, err := fakekube.Start(crds...)
	require.NoError(t, err)
	defer kube.Close()
	examples, err := loadExamples("testdata/examples")
	require.NoError(t, err)
	require.Equal(t, "openstack", namespaceOf(examples))

	notes, err := seed(kube, examples, fake.CloudsYAML(), fakecloud.SystemCloud, fakecloud.AdminCloud, "openstack")
	require.NoError(t, err)
	assert.Contains(t, notes, "20-widgets.yaml: skipped ConfigMap unrelated (no CRD for it in the demo)")

	sec, err := kube.Get(fakekube.SecretResource, "openstack", "cloud-credentials")
	require.NoError(t, err)
	assert.NotContains(t, sec, "stringData")
	raw, err := base64.StdEncoding.DecodeString(sec["data"].(map[string]any)["clouds.yaml"].(string))
	require.NoError(t, err)
	assert.Contains(t, string(raw), fake.AuthURL())

	w, err := kube.Get(crds[0], "openstack", "small")
	require.NoError(t, err)
	assert.Equal(t, "a small widget", w["spec"].(map[string]any)["description"])
	s, c := firstCredentials(kube, crds, "openstack")
	assert.Equal(t, []string{"cloud-credentials", "prod"}, []string{s, c})
}

func TestHookEnvFollowsTheChart(t *testing.T) {
	r, err := fakekube.ParseCRDFile("testdata/crds/widgets.yaml")
	require.NoError(t, err)
	t.Setenv("OPENSTACK_SYNC_CACHE_DIR", "/cache")
	env := hookEnv(plugin.Metadata{Name: "widgets", EnvPrefix: "WIDGET"}, r, hookSettings{
		PodNamespace: "openstack", Passthrough: []string{"OPENSTACK_SYNC_CACHE_DIR", "DEMO_UNSET_VARIABLE"},
	})
	assert.Equal(t, []string{
		"LOG_LEVEL=info",
		"POD_NAMESPACE=openstack",
		"WIDGET_ENABLED=true",
		"WIDGET_CRD_API_VERSION=test.openstack-sync.io/v1alpha1",
		"WIDGET_CRD_KIND=Widget",
		"WIDGET_CRD_RESOURCE=widgets.test.openstack-sync.io",
		"WIDGET_STATUS_ENABLED=true",
		"WIDGET_PRUNE=true",
		"WIDGET_SYNC_CRONTAB=0 * * * *",
		"WIDGET_READY_RETRIES=3",
		"WIDGET_READY_DELAY=0.2",
		"OPENSTACK_SYNC_CACHE_DIR=/cache",
	}, env)

	probe := hookEnv(plugin.Metadata{Name: "openstack-probe", EnvPrefix: "OPENSTACK_PROBE", Probe: true}, fakekube.Resource{},
		hookSettings{PodNamespace: "openstack", ProbeSecret: "s", ProbeCloud: "c"})
	assert.Equal(t, []string{"LOG_LEVEL=info", "POD_NAMESPACE=openstack", "OPENSTACK_PROBE_ENABLED=true",
		"OPENSTACK_PROBE_DEFAULT_SECRET=s", "OPENSTACK_PROBE_DEFAULT_CLOUD=c"}, probe)
}

func TestPlanHooksFollowsTheModulesMetadata(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"neutron-router-flavors", "ironic-runbooks", "openstack-probe", "broken"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name+".wasm"), []byte("\x00asm"), 0o600))
	}
	// The modules name themselves: the file name plays no part.
	meta := map[string]plugin.Metadata{
		"neutron-router-flavors": {Name: "neutron-router-flavors", EnvPrefix: "NRF"},
		"ironic-runbooks":        {Name: "ironic-runbooks", EnvPrefix: "IR"},
		"openstack-probe":        {Name: "openstack-probe", EnvPrefix: "OP", Probe: true},
	}
	read := func(_ context.Context, path string) (plugin.Metadata, error) {
		m, ok := meta[strings.TrimSuffix(filepath.Base(path), ".wasm")]
		if !ok {
			return m, errors.New("no metadata export")
		}
		return m, nil
	}
	crds := []fakekube.Resource{{Group: "neutron.openstack-sync.io", Version: "v1alpha1", Plural: "neutronrouterflavors", Kind: "NeutronRouterFlavor"}}
	hooks, notes, err := planHooks(context.Background(), read, crds, dir, hookSettings{Host: "/bin/host"})
	require.NoError(t, err)
	var names []string
	for _, h := range hooks {
		names = append(names, h.Plugin.Name)
	}
	assert.Equal(t, []string{"openstack-probe", "neutron-router-flavors"}, names, "probes first")
	assert.Equal(t, []string{"/bin/host", "hook", "--plugin", filepath.Join(dir, "neutron-router-flavors.wasm")}, hooks[1].Command)
	assert.Equal(t, crds[0], hooks[1].Resource)
	assert.Contains(t, hooks[1].Env, "NRF_CRD_KIND=NeutronRouterFlavor", "the env prefix is the module's own")
	require.Len(t, notes, 2)
	assert.Contains(t, notes[0], "broken.wasm: reading its metadata: no metadata export; not run")
	assert.Contains(t, notes[1], `plugin ironic-runbooks: no CRD with plural "ironicrunbooks"`)
}

func TestDiffCloud(t *testing.T) {
	fake := fakecloud.New(fakecloud.Options{})
	defer fake.Close()
	before := captureCloud(fake)
	kept := fake.AddFlavor(fakecloud.Flavor{Name: "kept", Enabled: true})
	gone := fake.AddRunbook(fakecloud.Runbook{Name: "CUSTOM_GONE"})
	mid := captureCloud(fake)

	created := diffCloud(before, mid)
	require.Len(t, created, 2)
	assert.Equal(t, "created", created[0].Action)
	assert.Equal(t, "ironic runbook", created[0].Resource.Kind)
	assert.Equal(t, "network flavor", created[1].Resource.Kind)

	after := captureCloud(fake)
	delete(after, "ironic runbook/"+gone.UUID)
	edited := after["network flavor/"+kept.ID]
	edited.Fields = map[string]any{}
	for k, v := range after["network flavor/"+kept.ID].Fields {
		edited.Fields[k] = v
	}
	edited.Fields["Description"] = "changed"
	after["network flavor/"+kept.ID] = edited
	changes := diffCloud(mid, after)
	require.Len(t, changes, 2)
	assert.Equal(t, "deleted", changes[0].Action)
	assert.Equal(t, "updated", changes[1].Action)
	assert.Equal(t, []string{"Description"}, changes[1].Changed)
	assert.Contains(t, changes[1].String(), "updated  network flavor kept")
	assert.Empty(t, diffCloud(after, after))
}

func TestEditSpec(t *testing.T) {
	tests := []struct {
		name string
		spec string
		want string
		desc string
	}{
		{"description is extended", `{"description":"flavor"}`, `{"description":"flavor (edited by the demo)"}`, `spec.description "flavor" -> "flavor (edited by the demo)"`},
		{"a range narrows", `{"minimum":10,"maximum":20}`, `{"maximum":19,"minimum":10}`, "spec.maximum 20 -> 19"},
		{"a one-value range gets a description", `{"minimum":10,"maximum":10}`, `{"description":"edited by the demo","maximum":10,"minimum":10}`, `spec.description set to "edited by the demo"`},
		{"no description yet", `{"runbookName":"CUSTOM_X"}`, `{"description":"edited by the demo","runbookName":"CUSTOM_X"}`, `spec.description set to "edited by the demo"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dec := json.NewDecoder(strings.NewReader(`{"spec":` + tt.spec + `}`))
			dec.UseNumber()
			var obj map[string]any
			require.NoError(t, dec.Decode(&obj))
			assert.Equal(t, tt.desc, editSpec(obj))
			got, err := json.Marshal(obj["spec"])
			require.NoError(t, err)
			assert.JSONEq(t, tt.want, string(got))
		})
	}
}

func TestStatusTable(t *testing.T) {
	r := fakekube.Resource{Kind: "Widget"}
	synced := rowOf(r, map[string]any{
		"metadata": map[string]any{"namespace": "openstack", "name": "a", "generation": json.Number("2"), "finalizers": []any{resource.Finalizer}},
		"status": map[string]any{"syncStatus": "Synced", "observedGeneration": json.Number("2"), "message": "Successfully reconciled widget",
			"conditions": []any{map[string]any{"type": "Ready", "reason": "Reconciled"}}},
	})
	fresh := rowOf(r, map[string]any{"metadata": map[string]any{"namespace": "openstack", "name": "a", "generation": json.Number("1")}})
	gone := rowOf(r, map[string]any{"metadata": map[string]any{"namespace": "openstack", "name": "b"}})

	var buf bytes.Buffer
	writeStatusTable(&buf, map[string]crRow{fresh.key(): fresh, gone.key(): gone}, map[string]crRow{synced.key(): synced})
	lines := strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
	require.Len(t, lines, 3)
	assert.Equal(t, []string{"KIND", "NAME", "GEN/OBSERVED", "SYNCED", "REASON", "FINALIZER", "CHANGE", "MESSAGE"}, strings.Fields(lines[0]))
	assert.Equal(t, []string{"Widget", "openstack/a", "2/2", "Synced", "Reconciled", "yes", "spec,status,+finalizer", "Successfully", "reconciled", "widget"}, strings.Fields(lines[1]))
	assert.Equal(t, []string{"Widget", "openstack/b", "-/-", "-", "-", "-", "gone"}, strings.Fields(lines[2]))
}

func TestSummariseKubeWrites(t *testing.T) {
	got := summariseKubeWrites([]fakekube.Request{
		{Method: "GET", Path: "/apis/g/v1/namespaces/n/widgets/a"},
		{Method: "PATCH", Path: "/apis/g/v1/namespaces/n/widgets/a", ContentType: fakekube.JSONPatchType, Code: 200},
		{Method: "PATCH", Path: "/apis/g/v1/namespaces/n/widgets/a/status", ContentType: fakekube.MergePatchType, Code: 200},
		{Method: "PATCH", Path: "/apis/g/v1/namespaces/n/widgets/b/status", ContentType: fakekube.MergePatchType, Code: 200},
		{Method: "PATCH", Path: "/apis/g/v1/namespaces/n/widgets/c", ContentType: fakekube.JSONPatchType, Code: 422},
	})
	assert.Equal(t, "1 patch metadata (finalizer), 1 patch metadata (finalizer) rejected 422, 2 patch status", got)
	assert.Empty(t, summariseKubeWrites(nil))
}
