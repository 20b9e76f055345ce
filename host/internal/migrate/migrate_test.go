package migrate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/kubeapi"
	"github.com/openstack-sync/openstack-sync/host/internal/migrate"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin/plugintest"
	"github.com/openstack-sync/openstack-sync/host/internal/profile"
)

var (
	fromCRD = migrate.CRD{Group: "example.understack.rackspace.net", Version: "v1alpha1", Plural: "widgets"}
	toCRD   = migrate.CRD{Group: "example.openstack-sync.io", Version: "v1alpha1", Plural: "widgets"}
)

// killed stands for the process dying at a write: the test recovers it and runs migrate again.
type killed struct{}

// site is the cluster and the cloud of one test: CRs by CRD and namespace/name, and the marker each
// OpenStack resource (named like its CR) carries: "understack", "openstack-sync", both or "".
type site struct {
	t       *testing.T
	crs     map[migrate.CRD]map[string]map[string]any
	markers map[string][]string
	rv      int
	// writes counts writes of either side; killAt, when positive, kills the run at that write.
	writes, killAt int
	// forbid refuses a verb (create, patch, delete) with 403.
	forbid string
	log    []string
}

func newSite(t *testing.T) *site {
	return &site{t: t, crs: map[migrate.CRD]map[string]map[string]any{fromCRD: {}, toCRD: {}}, markers: map[string][]string{}}
}

// original adds a CR as the original operator leaves it, and its resource with its marker.
func (s *site) original(name string, finalized bool, marker ...string) {
	s.rv++
	md := map[string]any{"name": name, "namespace": "ns", "uid": "uid-" + name, "resourceVersion": fmt.Sprint(s.rv),
		"labels": map[string]any{"team": "a"}}
	if finalized {
		md["finalizers"] = []any{"x/y", profile.FinalizerUnderstack}
	}
	s.crs[fromCRD]["ns/"+name] = map[string]any{"apiVersion": fromCRD.APIVersion(), "kind": "Widget", "metadata": md,
		"spec": map[string]any{"name": name, "size": json.Number("3"), "cloudCredentialsRef": map[string]any{"secretName": "s", "cloudName": "c"}}}
	if marker != nil {
		s.markers[name] = marker
	}
}

func (s *site) write(what string) {
	s.writes++
	s.log = append(s.log, what)
	if s.killAt > 0 && s.writes == s.killAt {
		panic(killed{})
	}
}

func crdOf(t kubeapi.Target) migrate.CRD {
	return migrate.CRD{Group: t.Group, Version: t.Version, Plural: t.Plural}
}

func apiErr(code int, name string) error {
	body, _ := json.Marshal(map[string]any{"kind": "Status", "code": code, "details": map[string]any{"name": name}})
	return &kubeapi.APIError{Code: code, Body: string(body)}
}

func (s *site) ListCRs(_ context.Context, t kubeapi.Target, _ string) ([]map[string]any, error) {
	var out []map[string]any
	for _, k := range slices.Sorted(maps.Keys(s.crs[crdOf(t)])) {
		out = append(out, clone(s.crs[crdOf(t)][k]))
	}
	return out, nil
}

func (s *site) GetCR(_ context.Context, t kubeapi.Target) (map[string]any, error) {
	o, ok := s.crs[crdOf(t)][t.Namespace+"/"+t.Name]
	if !ok {
		return nil, apiErr(http.StatusNotFound, t.Name)
	}
	return clone(o), nil
}

func (s *site) CreateCR(_ context.Context, t kubeapi.Target, body []byte, dryRun bool) error {
	if s.forbid == "create" {
		return apiErr(http.StatusForbidden, "")
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	var o map[string]any
	require.NoError(s.t, d.Decode(&o))
	md := o["metadata"].(map[string]any)
	key := t.Namespace + "/" + md["name"].(string)
	if _, ok := s.crs[crdOf(t)][key]; ok {
		return apiErr(http.StatusConflict, md["name"].(string))
	}
	if dryRun {
		return nil
	}
	s.write("create " + key)
	s.rv++
	md["uid"], md["resourceVersion"] = "new-"+key, fmt.Sprint(s.rv)
	s.crs[crdOf(t)][key] = o
	return nil
}

func (s *site) PatchCR(_ context.Context, t kubeapi.Target, patch []byte, dryRun bool) (string, error) {
	if s.forbid == "patch" {
		return "", apiErr(http.StatusForbidden, t.Name)
	}
	o := s.crs[crdOf(t)][t.Namespace+"/"+t.Name]
	if o == nil {
		return "", apiErr(http.StatusNotFound, t.Name)
	}
	var ops []map[string]any
	require.NoError(s.t, json.Unmarshal(patch, &ops))
	md := o["metadata"].(map[string]any)
	fs, _ := md["finalizers"].([]any)
	for _, op := range ops {
		switch {
		case op["op"] == "test" && op["path"] == "/metadata/resourceVersion":
			if op["value"] != md["resourceVersion"] {
				return "", apiErr(http.StatusUnprocessableEntity, t.Name)
			}
		case op["op"] == "test":
			var i int
			fmt.Sscanf(op["path"].(string), "/metadata/finalizers/%d", &i)
			if i >= len(fs) || fs[i] != op["value"] {
				return "", apiErr(http.StatusUnprocessableEntity, t.Name)
			}
		case op["op"] == "remove":
			var i int
			fmt.Sscanf(op["path"].(string), "/metadata/finalizers/%d", &i)
			fs = slices.Delete(slices.Clone(fs), i, i+1)
		}
	}
	if dryRun {
		return md["resourceVersion"].(string), nil
	}
	s.write("patch " + t.Namespace + "/" + t.Name)
	s.rv++
	md["finalizers"], md["resourceVersion"] = fs, fmt.Sprint(s.rv)
	return md["resourceVersion"].(string), nil
}

func (s *site) DeleteCR(_ context.Context, t kubeapi.Target, uid, rv string, dryRun bool) error {
	if s.forbid == "delete" {
		return apiErr(http.StatusForbidden, t.Name)
	}
	key := t.Namespace + "/" + t.Name
	o := s.crs[crdOf(t)][key]
	if o == nil {
		return apiErr(http.StatusNotFound, t.Name)
	}
	md := o["metadata"].(map[string]any)
	if md["uid"] != uid || md["resourceVersion"] != rv {
		return apiErr(http.StatusConflict, t.Name)
	}
	if dryRun {
		return nil
	}
	s.write("delete " + key)
	if fs, _ := md["finalizers"].([]any); len(fs) > 0 {
		md["deletionTimestamp"] = "2026-12-03T00:00:00Z" // Terminating: another finalizer holds it
		return nil
	}
	delete(s.crs[crdOf(t)], key)
	return nil
}

// remarker is the plugin: it moves a resource's marker from one profile to the other, in two
// writes when told to (a profile unbound and bound again), never leaving it without one.
type remarker struct {
	*plugintest.Plugin
	s        *site
	twoSteps bool
	fail     map[string]error
}

func (r *remarker) Remark(_ context.Context, _ plugin.Session, req plugin.RemarkRequest) (plugin.RemarkResult, error) {
	var spec struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(req.Spec, &spec); err != nil {
		return plugin.RemarkResult{}, err
	}
	name := spec.Name
	if err := r.fail[name]; err != nil {
		return plugin.RemarkResult{}, err
	}
	have := r.s.markers[name]
	if !slices.Contains(have, req.From) {
		return plugin.RemarkResult{}, nil
	}
	change := fmt.Sprintf("widget %s: %s -> %s", name, req.From, req.To)
	if req.DryRun {
		return plugin.RemarkResult{Changes: []string{change}}, nil
	}
	if r.twoSteps && !slices.Contains(have, req.To) {
		r.s.markers[name] = append(slices.Clone(have), req.To)
		r.s.write("mark " + name)
	}
	r.s.markers[name] = []string{req.To}
	r.s.write("unmark " + name)
	return plugin.RemarkResult{Changes: []string{change}}, nil
}

func clone(o map[string]any) map[string]any {
	b, _ := json.Marshal(o)
	var out map[string]any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	_ = d.Decode(&out)
	return out
}

func (s *site) migrator(dryRun bool, twoSteps bool, out *bytes.Buffer, logs *bytes.Buffer) *migrate.Migrator {
	p := &remarker{Plugin: &plugintest.Plugin{Meta: plugin.Metadata{Name: "widgets", Noun: "widget", EnvPrefix: "WIDGET",
		BindingName: "widgets", HasRemark: true}}, s: s, twoSteps: twoSteps}
	return &migrate.Migrator{Config: migrate.Config{From: profile.Understack, To: profile.OpenStackSync, FromCRD: fromCRD, ToCRD: toCRD,
		DryRun: dryRun}, Kube: s, Plugin: p, Connector: &plugintest.Connector{}, Out: out,
		Log: slog.New(slog.NewTextHandler(logs, nil))}
}

func (s *site) run(dryRun bool) (int, string, string) {
	var out, logs bytes.Buffer
	code := s.migrator(dryRun, false, &out, &logs).Run(context.Background())
	return code, out.String(), logs.String()
}

// owned checks the invariant a run stopped anywhere must keep: every CR is claimed under one CRD
// at least, and every resource carries one profile's marker at least.
func (s *site) owned(names ...string) {
	s.t.Helper()
	for _, n := range names {
		_, old := s.crs[fromCRD]["ns/"+n]
		_, moved := s.crs[toCRD]["ns/"+n]
		assert.True(s.t, old || moved, "CR %s is under neither CRD (writes: %v)", n, s.log)
		assert.NotEmpty(s.t, s.markers[n], "resource %s carries no marker (writes: %v)", n, s.log)
	}
}

func (s *site) moved(names ...string) {
	s.t.Helper()
	for key, o := range s.crs[fromCRD] {
		md := o["metadata"].(map[string]any)
		// Only another controller's finalizer may hold a source CR, Terminating.
		assert.Equal(s.t, []any{"x/y"}, md["finalizers"], key)
		assert.NotNil(s.t, md["deletionTimestamp"], key)
	}
	for _, n := range names {
		o := s.crs[toCRD]["ns/"+n]
		require.NotNil(s.t, o, n)
		md := o["metadata"].(map[string]any)
		assert.Equal(s.t, map[string]any{"team": "a"}, md["labels"], n)
		assert.Equal(s.t, map[string]any{"name": n, "size": json.Number("3"), "cloudCredentialsRef": map[string]any{"secretName": "s", "cloudName": "c"}},
			o["spec"], n)
		assert.Equal(s.t, []string{"openstack-sync"}, s.markers[n], n)
	}
}

func TestMigrateMovesCRsAndResources(t *testing.T) {
	s := newSite(t)
	s.original("a", true, "understack")
	s.original("b", false, "understack")
	before := clone(map[string]any{"crs": s.crs[fromCRD]})

	code, out, _ := s.run(true)
	assert.Equal(t, 0, code)
	assert.Equal(t, `# dry run: nothing is written; the API server checked every write below
Widget ns/a: widgets.example.understack.rackspace.net -> widgets.example.openstack-sync.io
  create widgets.example.openstack-sync.io ns/a with finalizer openstack-sync.io/finalizer
  re-mark widget a: understack -> openstack-sync
  remove finalizer openstack-sync.understack.rackspace.net/finalizer from widgets.example.understack.rackspace.net ns/a, then delete it
Widget ns/b: widgets.example.understack.rackspace.net -> widgets.example.openstack-sync.io
  create widgets.example.openstack-sync.io ns/b
  re-mark widget b: understack -> openstack-sync
  delete widgets.example.understack.rackspace.net ns/b
widgets.example.understack.rackspace.net -> widgets.example.openstack-sync.io: 2 to move, 0 moved already, 0 refused
`, out)
	assert.Zero(t, s.writes, "a dry run writes nothing")
	assert.Equal(t, before, clone(map[string]any{"crs": s.crs[fromCRD]}))

	code, _, _ = s.run(false)
	assert.Equal(t, 0, code)
	s.moved("a", "b")
	assert.Equal(t, []any{"openstack-sync.io/finalizer"}, s.crs[toCRD]["ns/a"]["metadata"].(map[string]any)["finalizers"])
	assert.Nil(t, s.crs[toCRD]["ns/b"]["metadata"].(map[string]any)["finalizers"], "a CR without the finalizer gets none")
	assert.Equal(t, []string{"create ns/a", "unmark a", "patch ns/a", "delete ns/a", "create ns/b", "unmark b", "delete ns/b"}, s.log,
		"per CR: the copy first, then the markers, then the original's finalizer and CR")

	writes := s.writes
	code, out, _ = s.run(false)
	assert.Equal(t, 0, code)
	assert.Equal(t, writes, s.writes, "a second run writes nothing")
	assert.Contains(t, out, "0 moved, 1 moved already, 0 refused", "the source CR ns/a waits for its other finalizer x/y")
}

// TestMigrateKilledAtEveryWriteIsFinishedByTheNextRun kills the run at each of its writes in
// turn (the process dying between two writes): every CR stays claimed under one CRD and every
// resource owned under one profile, and running migrate again finishes the move.
func TestMigrateKilledAtEveryWriteIsFinishedByTheNextRun(t *testing.T) {
	total := func() int {
		s := newSite(t)
		s.original("a", true, "understack")
		s.original("b", true, "understack", "openstack-sync")
		var out, logs bytes.Buffer
		require.Equal(t, 0, s.migrator(false, true, &out, &logs).Run(context.Background()))
		return s.writes
	}()
	require.Equal(t, 9, total)
	for k := 1; k <= total; k++ {
		t.Run(fmt.Sprintf("killed at write %d", k), func(t *testing.T) {
			s := newSite(t)
			s.original("a", true, "understack")
			s.original("b", true, "understack", "openstack-sync")
			s.killAt = k
			var out, logs bytes.Buffer
			func() {
				defer func() {
					if r := recover(); r != nil {
						require.IsType(t, killed{}, r)
					}
				}()
				s.migrator(false, true, &out, &logs).Run(context.Background())
				t.Fatalf("the run was not killed at write %d", k)
			}()
			s.owned("a", "b")
			s.killAt = 0
			out.Reset()
			require.Equal(t, 0, s.migrator(false, true, &out, &logs).Run(context.Background()), "%s\n%s", out.String(), logs.String())
			s.moved("a", "b")
		})
	}
}

func TestMigrateRefusals(t *testing.T) {
	t.Run("no permission to patch stops the run with one line", func(t *testing.T) {
		s := newSite(t)
		s.original("a", true, "understack")
		s.original("b", true, "understack")
		s.forbid = "patch"
		code, out, logs := s.run(false)
		assert.Equal(t, 1, code)
		assert.Contains(t, out, "stopped: not allowed to patch widgets.example.understack.rackspace.net ns/a (HTTP 403 Forbidden: ")
		assert.Contains(t, logs, "run migrate with credentials that may list, get, create, patch and delete the objects of "+
			"widgets.example.understack.rackspace.net and widgets.example.openstack-sync.io (docs/migrating.md)")
		assert.NotContains(t, out, "ns/b", "no other CR is tried")
		s.owned("a", "b")
	})
	t.Run("a dry run finds the missing permission too", func(t *testing.T) {
		s := newSite(t)
		s.original("a", true, "understack")
		s.forbid = "create"
		code, out, _ := s.run(true)
		assert.Equal(t, 1, code)
		assert.Contains(t, out, "stopped: not allowed to create widgets.example.openstack-sync.io ns/a")
	})
	t.Run("a CR being deleted waits for its own operator", func(t *testing.T) {
		s := newSite(t)
		s.original("gone", true, "understack")
		s.original("a", true, "understack")
		s.crs[fromCRD]["ns/gone"]["metadata"].(map[string]any)["deletionTimestamp"] = "2026-12-01T00:00:00Z"
		code, out, _ := s.run(false)
		assert.Equal(t, 1, code)
		assert.Contains(t, out, "refused: ns/gone is being deleted; let the understack profile's operator finish deleting it (PRUNE=true), "+
			"or remove its finalizer, then run migrate again")
		assert.Equal(t, []string{"understack"}, s.markers["gone"], "its resource is left to the original's prune")
		assert.Contains(t, s.crs[fromCRD], "ns/gone")
		assert.Contains(t, s.crs[toCRD], "ns/a", "the others still move")
	})
	t.Run("a CR under both CRDs with other specs", func(t *testing.T) {
		s := newSite(t)
		s.original("a", true, "understack")
		other := clone(s.crs[fromCRD]["ns/a"])
		other["spec"].(map[string]any)["size"] = json.Number("4")
		s.crs[toCRD]["ns/a"] = other
		code, out, _ := s.run(false)
		assert.Equal(t, 1, code)
		assert.Contains(t, out, "refused: ns/a exists under widgets.example.openstack-sync.io too, with another spec")
		assert.Zero(t, s.writes)
	})
	t.Run("a CR edited while migrate ran", func(t *testing.T) {
		s := newSite(t)
		s.original("a", true, "understack")
		p := s.migrator(false, false, &bytes.Buffer{}, &bytes.Buffer{})
		r := p.Plugin.(*remarker)
		r.fail = map[string]error{}
		// The edit lands after the copy, before the finalizer's removal.
		var out, logs bytes.Buffer
		p.Out, p.Log = &out, slog.New(slog.NewTextHandler(&logs, nil))
		p.Kube = editing{s}
		assert.Equal(t, 1, p.Run(context.Background()))
		assert.Contains(t, out.String(), "refused: widgets.example.understack.rackspace.net ns/a changed while migrate ran")
		assert.Contains(t, s.crs[fromCRD], "ns/a", "the edited CR keeps its finalizer and stays")
	})
	t.Run("a plugin that cannot re-mark", func(t *testing.T) {
		s := newSite(t)
		p := s.migrator(false, false, &bytes.Buffer{}, &bytes.Buffer{})
		var logs bytes.Buffer
		p.Log = slog.New(slog.NewTextHandler(&logs, nil))
		p.Plugin = &plugintest.Plugin{Meta: plugin.Metadata{Name: "widgets"}}
		assert.Equal(t, 1, p.Run(context.Background()))
		assert.Contains(t, logs.String(), "the plugin cannot move its ownership markers between profiles")
	})
	t.Run("re-marking failed: the CR stays under the original's CRD", func(t *testing.T) {
		s := newSite(t)
		s.original("a", true, "understack")
		p := s.migrator(false, false, &bytes.Buffer{}, &bytes.Buffer{})
		var out bytes.Buffer
		p.Out = &out
		p.Plugin.(*remarker).fail = map[string]error{"a": fmt.Errorf("Neutron answered 503")}
		assert.Equal(t, 1, p.Run(context.Background()))
		assert.Contains(t, out.String(), "refused: ns/a: re-marking its OpenStack resources failed: Neutron answered 503")
		assert.Contains(t, s.crs[fromCRD], "ns/a")
		s.owned("a")
	})
}

// editing changes a CR's resourceVersion right before migrate removes its finalizer.
type editing struct{ *site }

func (e editing) PatchCR(ctx context.Context, t kubeapi.Target, patch []byte, dryRun bool) (string, error) {
	if o := e.crs[crdOf(t)][t.Namespace+"/"+t.Name]; o != nil && strings.Contains(string(patch), "resourceVersion") {
		o["metadata"].(map[string]any)["resourceVersion"] = "edited"
	}
	return e.site.PatchCR(ctx, t, patch, dryRun)
}

func TestParseCRD(t *testing.T) {
	c, err := migrate.ParseCRD("ironicrunbooks.ironic.understack.rackspace.net/v1alpha1")
	require.NoError(t, err)
	assert.Equal(t, migrate.CRD{Group: "ironic.understack.rackspace.net", Version: "v1alpha1", Plural: "ironicrunbooks"}, c)
	for _, bad := range []string{"ironicrunbooks", "ironicrunbooks/v1", "ironicrunbooks.x", ".x/v1", "a.b/v1/x"} {
		_, err := migrate.ParseCRD(bad)
		assert.Error(t, err, bad)
	}
}
