// Package migrate moves a plugin's CRs and the OpenStack resources they claim from one profile's
// identifiers to another's (openstack-sync migrate, docs/migrating.md): from the original Python
// operator's CRD group, finalizer and ownership markers to this project's.
//
// Per CR, in an order where every step leaves every resource owned under one profile's names and
// every CR claimed under one CRD, so a run stopped anywhere (killed, a refusal, a lost connection)
// is finished by running it again:
//
//  1. the CR is created under the target CRD (same namespace, name, labels, annotations and spec)
//     with the target's finalizer when the source CR holds the source's; one already there with
//     the same spec is kept, one with another spec is refused;
//  2. the plugin moves the markers of what the CR claims (plugin.Remarker), each resource in
//     writes that never leave it without a marker of either profile;
//  3. the source CR's finalizer is removed by a JSON patch guarded by its resourceVersion (so a
//     CR edited since it was copied is refused, not lost), and the source CR is deleted with that
//     resourceVersion and its UID as preconditions.
//
// Between steps 1 and 3 the CR exists under both CRDs, and a hook of either profile refuses to act
// (docs/contract.md §11): no prune runs while a move is half done. A dry run makes every write a
// server-side dry run (the API server checks the request, permissions included, and stores
// nothing) and the plugin's remark a plan, and prints the plan.
package migrate

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/openstack-sync/openstack-sync/host/internal/kubeapi"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/profile"
	"github.com/openstack-sync/openstack-sync/host/internal/resource"
)

// CRD names one served version of a custom resource definition.
type CRD struct{ Group, Version, Plural string }

// ParseCRD reads <plural>.<group>/<version>, e.g.
// ironicrunbooks.ironic.understack.rackspace.net/v1alpha1.
func ParseCRD(s string) (CRD, error) {
	res, version, ok := strings.Cut(s, "/")
	plural, group, ok2 := strings.Cut(res, ".")
	if !ok || !ok2 || plural == "" || group == "" || version == "" || strings.Contains(version, "/") {
		return CRD{}, fmt.Errorf("%q is not <plural>.<group>/<version>, e.g. ironicrunbooks.ironic.understack.rackspace.net/v1alpha1", s)
	}
	return CRD{Group: group, Version: version, Plural: plural}, nil
}

func (c CRD) String() string     { return c.Plural + "." + c.Group }
func (c CRD) APIVersion() string { return c.Group + "/" + c.Version }

func (c CRD) target(namespace, name string) kubeapi.Target {
	return kubeapi.Target{Group: c.Group, Version: c.Version, Plural: c.Plural, Namespace: namespace, Name: name}
}

// Kube is what a migration asks of the Kubernetes API. Objects are decoded JSON with numbers
// as json.Number. A refusal is a *kubeapi.APIError; dryRun asks the API server to check a write
// and store nothing.
type Kube interface {
	// ListCRs lists the objects of t's custom resource in namespace ("" for every namespace);
	// t's Namespace and Name are not used.
	ListCRs(ctx context.Context, t kubeapi.Target, namespace string) ([]map[string]any, error)
	// GetCR reads one object; a missing one is an APIError with code 404.
	GetCR(ctx context.Context, t kubeapi.Target) (map[string]any, error)
	CreateCR(ctx context.Context, t kubeapi.Target, body []byte, dryRun bool) error
	// PatchCR applies a JSON patch and returns the object's new resourceVersion.
	PatchCR(ctx context.Context, t kubeapi.Target, patch []byte, dryRun bool) (string, error)
	// DeleteCR deletes the object with its UID and resourceVersion as preconditions.
	DeleteCR(ctx context.Context, t kubeapi.Target, uid, resourceVersion string, dryRun bool) error
}

// Config is one migration.
type Config struct {
	From, To       profile.Profile
	FromCRD, ToCRD CRD
	// Namespace limits the move to one namespace; "" moves every namespace's CRs.
	Namespace string
	DryRun    bool
}

// Migrator moves one plugin's CRs. The plugin must implement plugin.Remarker.
type Migrator struct {
	Config
	Kube      Kube
	Plugin    plugin.Plugin
	Connector plugin.Connector
	// Out receives the plan and what was done, one line per step; Log the errors.
	Out io.Writer
	Log *slog.Logger

	sessions map[plugin.Credentials]sessionOrErr
}

type sessionOrErr struct {
	s   plugin.Session
	err error
}

// Exit codes: every CR moved (or nothing to move), or some refused or failed.
const (
	ExitOK   = 0
	ExitFail = 1
)

// errAlready is a source CR an earlier run moved, held since by another controller's finalizer.
var errAlready = errors.New("moved already")

// errStop ends the whole run: the credentials may not write, so no other CR can move either.
type errStop struct{ msg string }

func (e *errStop) Error() string { return e.msg }

// Run moves every CR of FromCRD in reach and returns the exit code.
func (m *Migrator) Run(ctx context.Context) int {
	meta := m.Plugin.Metadata()
	r, ok := m.Plugin.(plugin.Remarker)
	switch {
	case meta.Probe:
		m.Log.Error("migrate: the plugin is a connectivity probe, which has no CRs to move", "plugin", meta.Name)
		return ExitFail
	case !ok || !meta.HasRemark:
		m.Log.Error("migrate: the plugin cannot move its ownership markers between profiles (it exports no remark); "+
			"update the plugin, or move its CRs by hand", "plugin", meta.Name)
		return ExitFail
	}
	m.sessions = map[plugin.Credentials]sessionOrErr{}
	objs, err := m.Kube.ListCRs(ctx, m.FromCRD.target("", ""), m.Namespace)
	if err != nil {
		m.Log.Error("migrate: cannot list "+m.FromCRD.String()+": "+err.Error()+"; run migrate with credentials that may list it",
			"plugin", meta.Name)
		return ExitFail
	}
	slices.SortFunc(objs, func(a, b map[string]any) int { return cmp.Compare(resource.Ref(a), resource.Ref(b)) })
	verb := "moved"
	if m.DryRun {
		verb = "to move"
		fmt.Fprintf(m.Out, "# dry run: nothing is written; the API server checked every write below\n")
	}
	moved, already, refused := 0, 0, 0
	for _, obj := range objs {
		err := m.move(ctx, r, meta, obj)
		var stop *errStop
		switch {
		case errors.Is(err, errAlready):
			already++
		case errors.As(err, &stop):
			m.Log.Error("migrate: "+stop.msg, "plugin", meta.Name)
			fmt.Fprintf(m.Out, "stopped: %s\n", stop.msg)
			return ExitFail
		case err != nil:
			refused++
			m.Log.Error("migrate: "+err.Error(), "plugin", meta.Name, "cr", resource.Ref(obj))
			fmt.Fprintf(m.Out, "  refused: %s\n", err)
		default:
			moved++
		}
	}
	fmt.Fprintf(m.Out, "%s -> %s: %d %s, %d moved already, %d refused\n", m.FromCRD, m.ToCRD, moved, verb, already, refused)
	if refused > 0 {
		return ExitFail
	}
	return ExitOK
}

// move moves one CR through the three steps of the package comment.
func (m *Migrator) move(ctx context.Context, r plugin.Remarker, meta plugin.Metadata, obj map[string]any) error {
	cr, err := resource.Parse(obj, "")
	ref := resource.Ref(obj)
	fmt.Fprintf(m.Out, "%s %s: %s -> %s\n", cmp.Or(kindOf(obj), meta.Noun), ref, m.FromCRD, m.ToCRD)
	if err != nil {
		return fmt.Errorf("%s cannot be read (%v); fix it, then run migrate again", ref, err)
	}
	from, to := m.From.Finalizer(), m.To.Finalizer()
	switch {
	case cr.Deleting && !cr.HasFinalizer(from) && m.targetKept(ctx, obj, cr):
		// Moved by an earlier run, and held by another controller's finalizer since.
		fmt.Fprintf(m.Out, "  moved already; %s %s waits for its other finalizers %v\n", m.FromCRD, cr.Ref(), cr.Finalizers)
		return errAlready
	case cr.Deleting:
		return fmt.Errorf("%s is being deleted; let the %s profile's operator finish deleting it (PRUNE=true), or remove its finalizer, then run migrate again", ref, m.From)
	case cr.HasFinalizer(to):
		return fmt.Errorf("%s carries the finalizer %s of the target profile already; remove it, then run migrate again", ref, to)
	}
	if err := m.ensureTarget(ctx, obj, cr, cr.HasFinalizer(from)); err != nil {
		return err
	}
	s, err := m.session(ctx, cr.Credentials)
	if err != nil {
		return fmt.Errorf("%s: cannot reach OpenStack with %s: %v; its resources keep the %s markers and its CR stays under %s",
			ref, cr.Credentials, err, m.From, m.FromCRD)
	}
	res, err := r.Remark(ctx, s, plugin.RemarkRequest{Object: cr.Object(), Spec: cr.Spec, From: string(m.From), To: string(m.To), DryRun: m.DryRun})
	if err != nil {
		return fmt.Errorf("%s: re-marking its OpenStack resources failed: %v; what was not moved keeps the %s markers, and its CR stays under %s",
			ref, err, m.From, m.FromCRD)
	}
	for _, c := range res.Changes {
		fmt.Fprintf(m.Out, "  re-mark %s\n", c)
	}
	for _, n := range res.Notes {
		fmt.Fprintf(m.Out, "  note: %s\n", n)
	}
	return m.retire(ctx, cr, from)
}

// ensureTarget creates the CR under the target CRD, or checks the one a stopped run created.
func (m *Migrator) ensureTarget(ctx context.Context, obj map[string]any, cr *resource.Resource, finalized bool) error {
	t := m.ToCRD.target(cr.Namespace, cr.Name)
	spec, _ := obj["spec"].(map[string]any)
	have, err := m.Kube.GetCR(ctx, t)
	switch ae, isAPI := kubeapi.AsAPIError(err); {
	case err == nil:
		if !specKept(spec, have["spec"]) {
			return fmt.Errorf("%s exists under %s too, with another spec; delete the one not wanted (its resources stay), then run migrate again",
				cr.Ref(), m.ToCRD)
		}
		fmt.Fprintf(m.Out, "  %s %s exists already\n", m.ToCRD, cr.Ref())
		return nil
	case !isAPI || ae.Code != http.StatusNotFound:
		return m.refusal("read", m.ToCRD, cr.Ref(), err)
	}
	md, _ := obj["metadata"].(map[string]any)
	newMD := map[string]any{"name": cr.Name, "namespace": cr.Namespace}
	for _, k := range []string{"labels", "annotations"} {
		if v, ok := md[k].(map[string]any); ok && len(v) > 0 {
			newMD[k] = maps.Clone(v)
		}
	}
	what := ""
	if finalized {
		newMD["finalizers"] = []string{m.To.Finalizer()}
		what = " with finalizer " + m.To.Finalizer()
	}
	body, err := json.Marshal(map[string]any{"apiVersion": m.ToCRD.APIVersion(), "kind": kindOf(obj), "metadata": newMD, "spec": spec})
	if err != nil {
		return err
	}
	fmt.Fprintf(m.Out, "  create %s %s%s\n", m.ToCRD, cr.Ref(), what)
	if err := m.Kube.CreateCR(ctx, t, body, m.DryRun); err != nil {
		return m.refusal("create", m.ToCRD, cr.Ref(), err)
	}
	return nil
}

// targetKept reports whether the CR exists under the target CRD with the source's spec.
func (m *Migrator) targetKept(ctx context.Context, obj map[string]any, cr *resource.Resource) bool {
	have, err := m.Kube.GetCR(ctx, m.ToCRD.target(cr.Namespace, cr.Name))
	spec, _ := obj["spec"].(map[string]any)
	return err == nil && specKept(spec, have["spec"])
}

// retire removes the source profile's finalizer from the source CR, guarded by the
// resourceVersion its spec was copied at, and deletes it.
func (m *Migrator) retire(ctx context.Context, cr *resource.Resource, fin string) error {
	t := m.FromCRD.target(cr.Namespace, cr.Name)
	rv := cr.ResourceVersion
	if i := cr.FinalizerIndex(fin); i >= 0 {
		fmt.Fprintf(m.Out, "  remove finalizer %s from %s %s, then delete it\n", fin, m.FromCRD, cr.Ref())
		path := "/metadata/finalizers/" + strconv.Itoa(i)
		patch, _ := json.Marshal([]map[string]any{
			{"op": "test", "path": "/metadata/resourceVersion", "value": cr.ResourceVersion},
			{"op": "test", "path": path, "value": fin},
			{"op": "remove", "path": path},
		})
		newRV, err := m.Kube.PatchCR(ctx, t, patch, m.DryRun)
		if err != nil {
			return m.refusal("patch", m.FromCRD, cr.Ref(), err)
		}
		if !m.DryRun {
			rv = newRV
		}
	} else {
		fmt.Fprintf(m.Out, "  delete %s %s\n", m.FromCRD, cr.Ref())
	}
	if err := m.Kube.DeleteCR(ctx, t, cr.UID, rv, m.DryRun); err != nil {
		if ae, ok := kubeapi.AsAPIError(err); ok && ae.ObjectGone(cr.Name) {
			return nil
		}
		return m.refusal("delete", m.FromCRD, cr.Ref(), err)
	}
	return nil
}

// refusal turns a refused write into its one line: a missing permission stops the run (no other
// CR could move either), a conflict is this CR's (it changed while migrate ran).
func (m *Migrator) refusal(verb string, crd CRD, ref string, err error) error {
	ae, ok := kubeapi.AsAPIError(err)
	switch {
	case ok && (ae.Code == http.StatusForbidden || ae.Code == http.StatusUnauthorized):
		return &errStop{msg: fmt.Sprintf("not allowed to %s %s %s (%v): run migrate with credentials that may list, get, create, "+
			"patch and delete the objects of %s and %s (docs/migrating.md)", verb, crd, ref, ae, m.FromCRD, m.ToCRD)}
	case ok && (ae.Code == http.StatusConflict || ae.Code == http.StatusUnprocessableEntity && verb == "patch"):
		return fmt.Errorf("%s %s changed while migrate ran (%v); run migrate again", crd, ref, ae)
	}
	return fmt.Errorf("cannot %s %s %s: %v", verb, crd, ref, err)
}

// session connects to a credential group once per run and checks the API once.
func (m *Migrator) session(ctx context.Context, c plugin.Credentials) (plugin.Session, error) {
	if s, ok := m.sessions[c]; ok {
		return s.s, s.err
	}
	s, err := m.Connector.Connect(ctx, c)
	if err == nil {
		err = m.Plugin.WaitForAPI(ctx, s)
	}
	m.sessions[c] = sessionOrErr{s: s, err: err}
	return s, err
}

// specKept reports whether the target CR's spec holds the source's: the target CRD may default
// fields the source's does not know, which the source leaves unset.
func specKept(src map[string]any, dst any) bool {
	d, ok := dst.(map[string]any)
	if !ok {
		return false
	}
	for k, v := range src {
		if !sameJSON(v, d[k]) {
			return false
		}
	}
	return true
}

func sameJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	if errA != nil || errB != nil {
		return false
	}
	var na, nb any
	return json.Unmarshal(ja, &na) == nil && json.Unmarshal(jb, &nb) == nil && reflect.DeepEqual(na, nb)
}

func kindOf(obj map[string]any) string {
	k, _ := obj["kind"].(string)
	return k
}
