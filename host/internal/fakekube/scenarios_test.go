package fakekube

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// The scenarios below are the fake's contract. Each runs against the fake (this tier) and, in the
// real-parts tier (build tag e2e), against a real kube-apiserver, so the fake cannot drift from the
// server it imitates.

const finalizer = "openstack-sync.io/finalizer"

var (
	widgetsGVR = schema.GroupVersionResource{Group: "test.openstack-sync.io", Version: "v1alpha1", Resource: "widgets"}
	gadgetsGVR = schema.GroupVersionResource{Group: "test.openstack-sync.io", Version: "v1alpha1", Resource: "gadgets"}
	secretsGVR = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
)

// observed is one watch event on widgets of the fixture's namespace.
type observed struct {
	Type   string // Added, Modified, Deleted
	Name   string
	Object map[string]any
}

type fixture struct {
	cfg     *rest.Config
	client  dynamic.Interface
	ns      string
	otherNS string
	widgets dynamic.ResourceInterface // status subresource
	gadgets dynamic.ResourceInterface // no status subresource
	// events returns the widget events of ns from position from on, once at least want of them
	// have been seen (a real watch delivers asynchronously).
	events func(t *testing.T, from, want int) []observed
}

type scenario struct {
	name string
	run  func(t *testing.T, newFixture func(*testing.T) *fixture)
}

var scenarios = []scenario{
	{"create sets system fields and drops status", scenarioCreate},
	{"errors are Status bodies naming the object", scenarioErrors},
	{"unknown routes are a plain 404", scenarioUnknownRoute},
	{"update rules", scenarioUpdateRules},
	{"stale resourceVersion conflicts", scenarioStaleUpdate},
	{"status subresource ignores everything else", scenarioStatusSubresource},
	{"no-op write keeps resourceVersion and emits nothing", scenarioNoOpWrite},
	{"JSON patch resourceVersion test", scenarioJSONPatch},
	{"delete with finalizers", scenarioDeleteWithFinalizers},
	{"delete without finalizers and preconditions", scenarioDeleteWithoutFinalizers},
	{"list by namespace and label", scenarioList},
	{"secrets through the typed client", scenarioSecrets},
}

func widget(name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test.openstack-sync.io/v1alpha1",
		"kind":       "Widget",
		"metadata":   map[string]any{"name": name},
		"spec":       spec,
		"status":     map[string]any{"syncStatus": "Synced"},
	}}
}

func (f *fixture) create(t *testing.T, name string, finalizers ...string) *unstructured.Unstructured {
	t.Helper()
	w := widget(name, map[string]any{"size": int64(1)})
	if len(finalizers) > 0 {
		w.SetFinalizers(finalizers)
	}
	out, err := f.widgets.Create(context.Background(), w, metav1.CreateOptions{})
	require.NoError(t, err)
	return out
}

func (f *fixture) eventTypes(t *testing.T, from, want int) []string {
	t.Helper()
	var out []string
	for _, e := range f.events(t, from, want) {
		out = append(out, e.Type+" "+e.Name)
	}
	return out
}

func statusOf(t *testing.T, err error) metav1.Status {
	t.Helper()
	var se *apierrors.StatusError
	require.ErrorAs(t, err, &se)
	return se.ErrStatus
}

func detailsName(st metav1.Status) string {
	if st.Details == nil {
		return ""
	}
	return st.Details.Name
}

func subresources(sub string) []string {
	if sub == "" {
		return nil
	}
	return []string{sub}
}

func scenarioCreate(t *testing.T, newFixture func(*testing.T) *fixture) {
	f := newFixture(t)
	got := f.create(t, "a")
	assert.NotEmpty(t, got.GetUID())
	assert.NotEmpty(t, got.GetResourceVersion())
	assert.NotEmpty(t, got.GetCreationTimestamp())
	assert.Equal(t, int64(1), got.GetGeneration())
	assert.Equal(t, f.ns, got.GetNamespace())
	_, has := got.Object["status"]
	assert.False(t, has, "status is a subresource, so create ignores it")

	g := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test.openstack-sync.io/v1alpha1", "kind": "Gadget",
		"metadata": map[string]any{"name": "g"}, "status": map[string]any{"x": "kept"},
	}}
	gotG, err := f.gadgets.Create(context.Background(), g, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "kept", gotG.Object["status"].(map[string]any)["x"], "without a status subresource status is ordinary data")
	assert.Equal(t, []string{"Added a"}, f.eventTypes(t, 0, 1))
}

func scenarioErrors(t *testing.T, newFixture func(*testing.T) *fixture) {
	f := newFixture(t)
	f.create(t, "a")
	ctx := context.Background()

	_, err := f.widgets.Create(ctx, widget("a", nil), metav1.CreateOptions{})
	st := statusOf(t, err)
	assert.Equal(t, int32(http.StatusConflict), st.Code)
	assert.Equal(t, metav1.StatusReasonAlreadyExists, st.Reason)
	assert.Equal(t, "a", detailsName(st))

	_, err = f.widgets.Get(ctx, "missing", metav1.GetOptions{})
	st = statusOf(t, err)
	assert.Equal(t, int32(http.StatusNotFound), st.Code)
	assert.Equal(t, metav1.StatusReasonNotFound, st.Reason)
	assert.Equal(t, "missing", detailsName(st))
	assert.Equal(t, "widgets", st.Details.Kind)
	assert.Equal(t, `widgets.test.openstack-sync.io "missing" not found`, st.Message)

	for _, sub := range []string{"", "status"} {
		_, err = f.widgets.Patch(ctx, "missing", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{}, subresources(sub)...)
		assert.Equal(t, "missing", detailsName(statusOf(t, err)), "patch %q of a missing object", sub)
	}
	err = f.widgets.Delete(ctx, "missing", metav1.DeleteOptions{})
	assert.Equal(t, "missing", detailsName(statusOf(t, err)))
}

func scenarioUnknownRoute(t *testing.T, newFixture func(*testing.T) *fixture) {
	f := newFixture(t)
	hc, err := rest.HTTPClientFor(f.cfg)
	require.NoError(t, err)
	for _, path := range []string{
		"/apis/test.openstack-sync.io/v1alpha1/namespaces/" + f.ns + "/nothings/a",
		"/apis/other.openstack-sync.io/v1/namespaces/" + f.ns + "/widgets/a",
	} {
		resp, err := hc.Get(f.cfg.Host + path)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		assert.Equal(t, http.StatusNotFound, resp.StatusCode, path)
		assert.Equal(t, "404 page not found\n", string(body), path)
	}
}

func scenarioUpdateRules(t *testing.T, newFixture func(*testing.T) *fixture) {
	tests := []struct {
		name    string
		edit    func(u *unstructured.Unstructured)
		wantGen int64
	}{
		{"spec change bumps generation", func(u *unstructured.Unstructured) {
			require.NoError(t, unstructured.SetNestedField(u.Object, int64(2), "spec", "size"))
		}, 2},
		{"label change keeps generation", func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"a": "b"}) }, 1},
		{"finalizer change keeps generation", func(u *unstructured.Unstructured) { u.SetFinalizers([]string{finalizer}) }, 1},
		{"status through the main resource is ignored", func(u *unstructured.Unstructured) {
			u.Object["status"] = map[string]any{"syncStatus": "Synced"}
			u.SetAnnotations(map[string]string{"touch": "1"})
		}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			orig := f.create(t, "a")
			edited := orig.DeepCopy()
			tt.edit(edited)
			got, err := f.widgets.Update(context.Background(), edited, metav1.UpdateOptions{})
			require.NoError(t, err)
			assert.NotEqual(t, orig.GetResourceVersion(), got.GetResourceVersion())
			assert.Equal(t, tt.wantGen, got.GetGeneration())
			_, has := got.Object["status"]
			assert.False(t, has)
			assert.Equal(t, []string{"Added a", "Modified a"}, f.eventTypes(t, 0, 2))
		})
	}
}

func scenarioStaleUpdate(t *testing.T, newFixture func(*testing.T) *fixture) {
	f := newFixture(t)
	orig := f.create(t, "a")
	first := orig.DeepCopy()
	first.SetLabels(map[string]string{"x": "1"})
	_, err := f.widgets.Update(context.Background(), first, metav1.UpdateOptions{})
	require.NoError(t, err)

	stale := orig.DeepCopy()
	stale.SetLabels(map[string]string{"x": "2"})
	_, err = f.widgets.Update(context.Background(), stale, metav1.UpdateOptions{})
	st := statusOf(t, err)
	assert.Equal(t, int32(http.StatusConflict), st.Code)
	assert.Equal(t, metav1.StatusReasonConflict, st.Reason)
	assert.Equal(t, "a", detailsName(st))
}

func scenarioStatusSubresource(t *testing.T, newFixture func(*testing.T) *fixture) {
	f := newFixture(t)
	ctx := context.Background()
	orig := f.create(t, "a")

	edited := orig.DeepCopy()
	edited.Object["status"] = map[string]any{"syncStatus": "Failed"}
	require.NoError(t, unstructured.SetNestedField(edited.Object, int64(9), "spec", "size"))
	edited.SetFinalizers([]string{finalizer})
	got, err := f.widgets.UpdateStatus(ctx, edited, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "Failed", got.Object["status"].(map[string]any)["syncStatus"])
	size, _, _ := unstructured.NestedInt64(got.Object, "spec", "size")
	assert.Equal(t, int64(1), size, "spec sent to /status is ignored")
	assert.Empty(t, got.GetFinalizers(), "metadata sent to /status is ignored")
	assert.Equal(t, int64(1), got.GetGeneration())

	// The framework's status write (docs/contract.md §6.2): a merge patch of {"status": {...}}.
	got, err = f.widgets.Patch(ctx, "a", types.MergePatchType,
		[]byte(`{"spec":{"size":5},"status":{"syncStatus":"Synced","observedGeneration":1}}`), metav1.PatchOptions{}, "status")
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"syncStatus": "Synced", "observedGeneration": int64(1)}, got.Object["status"])
	size, _, _ = unstructured.NestedInt64(got.Object, "spec", "size")
	assert.Equal(t, int64(1), size)

	// Without a status subresource there is no /status route.
	_, err = f.gadgets.Patch(ctx, "g", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{}, "status")
	assert.True(t, apierrors.IsNotFound(err))
}

func scenarioNoOpWrite(t *testing.T, newFixture func(*testing.T) *fixture) {
	f := newFixture(t)
	ctx := context.Background()
	orig := f.create(t, "a")

	status := []byte(`{"status":{"syncStatus":"Synced"}}`)
	first, err := f.widgets.Patch(ctx, "a", types.MergePatchType, status, metav1.PatchOptions{}, "status")
	require.NoError(t, err)
	again, err := f.widgets.Patch(ctx, "a", types.MergePatchType, status, metav1.PatchOptions{}, "status")
	require.NoError(t, err)
	assert.NotEqual(t, orig.GetResourceVersion(), first.GetResourceVersion())
	assert.Equal(t, first.GetResourceVersion(), again.GetResourceVersion())
	// A later write to another object proves the watch has moved past the no-op.
	f.create(t, "sentinel")
	assert.Equal(t, []string{"Added a", "Modified a", "Added sentinel"}, f.eventTypes(t, 0, 3))
}

func scenarioJSONPatch(t *testing.T, newFixture func(*testing.T) *fixture) {
	tests := []struct {
		name     string
		patch    func(rv string) string
		wantCode int32
	}{
		{"current resourceVersion applies", func(rv string) string {
			return fmt.Sprintf(`[{"op":"test","path":"/metadata/resourceVersion","value":%q},{"op":"add","path":"/metadata/finalizers","value":[%q]}]`, rv, finalizer)
		}, 0},
		{"stale resourceVersion is 422", func(rv string) string {
			return fmt.Sprintf(`[{"op":"test","path":"/metadata/resourceVersion","value":"%s0"},{"op":"add","path":"/metadata/finalizers","value":[%q]}]`, rv, finalizer)
		}, http.StatusUnprocessableEntity},
		{"index test of a missing finalizer is 422", func(string) string {
			return fmt.Sprintf(`[{"op":"test","path":"/metadata/finalizers/0","value":%q},{"op":"remove","path":"/metadata/finalizers/0"}]`, finalizer)
		}, http.StatusUnprocessableEntity},
		{"resourceVersion replaced by the patch conflicts", func(string) string {
			return `[{"op":"replace","path":"/metadata/resourceVersion","value":"1"}]`
		}, http.StatusConflict},
		{"malformed patch is 400", func(string) string { return `{"op":"add"}` }, http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.create(t, "other")
			orig := f.create(t, "a")
			got, err := f.widgets.Patch(context.Background(), "a", types.JSONPatchType, []byte(tt.patch(orig.GetResourceVersion())), metav1.PatchOptions{})
			if tt.wantCode == 0 {
				require.NoError(t, err)
				assert.Equal(t, []string{finalizer}, got.GetFinalizers())
				return
			}
			st := statusOf(t, err)
			assert.Equal(t, tt.wantCode, st.Code)
			if tt.wantCode == http.StatusUnprocessableEntity {
				// The real server reports a failed JSON patch with empty details: the framework
				// must not mistake it for "the object is gone".
				assert.Equal(t, metav1.StatusReasonInvalid, st.Reason)
				assert.Empty(t, detailsName(st))
			}
			cur, err := f.widgets.Get(context.Background(), "a", metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, orig.GetResourceVersion(), cur.GetResourceVersion(), "a rejected patch writes nothing")
		})
	}
}

func scenarioDeleteWithFinalizers(t *testing.T, newFixture func(*testing.T) *fixture) {
	f := newFixture(t)
	ctx := context.Background()
	f.create(t, "a", finalizer)

	err := f.widgets.Delete(ctx, "a", metav1.DeleteOptions{})
	require.NoError(t, err)
	term, err := f.widgets.Get(ctx, "a", metav1.GetOptions{})
	require.NoError(t, err, "a finalizer keeps the object")
	require.NotNil(t, term.GetDeletionTimestamp())
	assert.Equal(t, int64(2), term.GetGeneration(), "marking an object terminating bumps generation")

	// A second delete changes nothing.
	require.NoError(t, f.widgets.Delete(ctx, "a", metav1.DeleteOptions{}))
	again, err := f.widgets.Get(ctx, "a", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, term.GetResourceVersion(), again.GetResourceVersion())

	// Spec edits are still allowed while terminating; new finalizers are not.
	_, err = f.widgets.Patch(ctx, "a", types.MergePatchType, []byte(`{"spec":{"size":3}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	_, err = f.widgets.Patch(ctx, "a", types.JSONPatchType,
		[]byte(`[{"op":"add","path":"/metadata/finalizers/-","value":"other.io/keep"}]`), metav1.PatchOptions{})
	st := statusOf(t, err)
	assert.Equal(t, int32(http.StatusUnprocessableEntity), st.Code)
	assert.Equal(t, metav1.StatusReasonInvalid, st.Reason)
	assert.Equal(t, "a", detailsName(st))
	require.NotNil(t, st.Details)
	// kube-apiserver 1.34 lists the same cause twice (two validation passes); one is the rule.
	require.NotEmpty(t, st.Details.Causes)
	for _, c := range st.Details.Causes {
		assert.Equal(t, "metadata.finalizers", c.Field)
	}
	assert.Contains(t, st.Message, "no new finalizers can be added if the object is being deleted")

	// The framework's release patch (docs/contract.md §5.2) removes the last finalizer: the object goes.
	_, err = f.widgets.Patch(ctx, "a", types.JSONPatchType,
		fmt.Appendf(nil, `[{"op":"test","path":"/metadata/finalizers/0","value":%q},{"op":"remove","path":"/metadata/finalizers/0"}]`, finalizer),
		metav1.PatchOptions{})
	require.NoError(t, err)
	_, err = f.widgets.Get(ctx, "a", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err))

	events := f.events(t, 0, 4)
	var seen []string
	for _, e := range events {
		seen = append(seen, e.Type+" "+e.Name)
	}
	assert.Equal(t, []string{
		"Added a",
		"Modified a", // deletionTimestamp set
		"Modified a", // spec edit
		"Deleted a",  // last finalizer removed
	}, seen)
	require.Len(t, events, 4)
	assert.NotNil(t, events[1].Object["metadata"].(map[string]any)["deletionTimestamp"])
	assert.NotNil(t, events[3].Object["metadata"].(map[string]any)["deletionTimestamp"])
	// The Deleted event carries the last stored state: the finalizer whose removal deleted it is
	// still there, as the real server shows (docs/contract.md Decision 10).
	assert.Equal(t, []any{finalizer}, events[3].Object["metadata"].(map[string]any)["finalizers"])
}

func scenarioDeleteWithoutFinalizers(t *testing.T, newFixture func(*testing.T) *fixture) {
	f := newFixture(t)
	ctx := context.Background()
	a := f.create(t, "a")

	wrong := types.UID("not-the-uid")
	err := f.widgets.Delete(ctx, "a", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &wrong}})
	assert.True(t, apierrors.IsConflict(err))

	uid := a.GetUID()
	require.NoError(t, f.widgets.Delete(ctx, "a", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}))
	_, err = f.widgets.Get(ctx, "a", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err))
	assert.Equal(t, []string{"Added a", "Deleted a"}, f.eventTypes(t, 0, 2))
}

func scenarioList(t *testing.T, newFixture func(*testing.T) *fixture) {
	f := newFixture(t)
	ctx := context.Background()
	b := widget("b", nil)
	b.SetLabels(map[string]string{"tier": "gold"})
	_, err := f.widgets.Create(ctx, b, metav1.CreateOptions{})
	require.NoError(t, err)
	f.create(t, "a")
	_, err = f.client.Resource(widgetsGVR).Namespace(f.otherNS).Create(ctx, widget("c", nil), metav1.CreateOptions{})
	require.NoError(t, err)

	names := func(l *unstructured.UnstructuredList) []string {
		var out []string
		for _, it := range l.Items {
			// A shared real server holds other tests' objects too.
			if it.GetNamespace() == f.ns || it.GetNamespace() == f.otherNS {
				out = append(out, it.GetNamespace()+"/"+it.GetName())
			}
		}
		return out
	}
	l, err := f.widgets.List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{f.ns + "/a", f.ns + "/b"}, names(l))
	l, err = f.client.Resource(widgetsGVR).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	all := names(l)
	sort.Strings(all)
	want := []string{f.otherNS + "/c", f.ns + "/a", f.ns + "/b"}
	sort.Strings(want)
	assert.Equal(t, want, all)
	l, err = f.widgets.List(ctx, metav1.ListOptions{LabelSelector: "tier=gold"})
	require.NoError(t, err)
	assert.Equal(t, []string{f.ns + "/b"}, names(l))
}

func scenarioSecrets(t *testing.T, newFixture func(*testing.T) *fixture) {
	f := newFixture(t)
	data, err := os.ReadFile("testdata/secret.json")
	require.NoError(t, err)
	var obj map[string]any
	require.NoError(t, json.Unmarshal(data, &obj))
	_, err = f.client.Resource(secretsGVR).Namespace(f.ns).Create(context.Background(), &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
	require.NoError(t, err)

	cs, err := kubernetes.NewForConfig(f.cfg)
	require.NoError(t, err)
	sec, err := cs.CoreV1().Secrets(f.ns).Get(context.Background(), "cloud-credentials", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "clouds: {}\n", string(sec.Data["clouds.yaml"]), "stringData is folded into data")
	assert.Empty(t, sec.StringData)

	_, err = cs.CoreV1().Secrets(f.ns).Get(context.Background(), "absent", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err))
	assert.Equal(t, "absent", detailsName(statusOf(t, err)))
}
