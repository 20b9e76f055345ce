package statemachine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openstack-sync/openstack-sync/host/internal/fakekube"
	"github.com/openstack-sync/openstack-sync/host/internal/kubeapi"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/resource"
)

// ---- Kubernetes: runner.Kube over the fakekube store, with faults ----

// pendingWrite is a finalizer write the runner was told failed: the runner verifies it with a
// read (finalizer.Apply), and the outcome of that read decides whether the write failed.
type pendingWrite struct {
	wanted  bool // the finalizer present after the write
	release bool // the release of a deleted CR (not the add or removal on a live one)
	group   plugin.Credentials
	name    string // spec.name
}

type kube struct {
	w       *world
	pending map[string]pendingWrite
}

func key(t kubeapi.Target) string { return t.Namespace + "/" + t.Name }

// apiError renders a store error as the client would: a kubeapi.APIError with a Status body.
func apiError(err error) error {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		st = apierrors.NewInternalError(err)
	}
	s := st.Status()
	s.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	body, _ := json.Marshal(&s)
	return &kubeapi.APIError{Code: int(s.Code), Body: string(body), Err: err}
}

func (k *kube) JSONPatch(_ context.Context, t kubeapi.Target, patch []byte) error {
	w := k.w
	w.settle(false)
	pw := w.writeOf(key(t), strings.Contains(string(patch), `"op":"add"`))
	before, err := w.srv.Get(w.res, t.Namespace, t.Name)
	if err != nil {
		// A release of an object already gone succeeds (the runner reads the 404 as gone); any
		// other write fails.
		k.fail(t, pw, pw.release && apierrors.IsNotFound(err))
		return apiError(err)
	}
	had := hasFinalizer(before)
	live := before["metadata"].(map[string]any)["deletionTimestamp"] == nil
	apply := func() error {
		_, err := w.srv.Patch(w.res, t.Namespace, t.Name, "", fakekube.JSONPatchType, patch)
		if err == nil && had && !pw.wanted && live && w.policy.UsesFinalizer() {
			// Invariant 6: a CR keeps the finalizer while it lives (a release addressed by name
			// must never strip a newer object of that name).
			w.violate("the finalizer of live CR %s was removed", key(t))
		}
		if err == nil && pw.release && had {
			w.released = append(w.released, released{group: pw.group, name: pw.name})
		}
		return err
	}
	switch f := w.pick("kube patch", 0.04, "409", "500", "500 after applying", "transport", "404 gone"); f {
	case "":
		if err := apply(); err != nil {
			k.pending[key(t)] = pw
			return apiError(err)
		}
		return nil
	case "409":
		k.pending[key(t)] = pw
		return apiError(apierrors.NewConflict(w.res.GroupResource(), t.Name, errors.New("the object has been modified")))
	case "500":
		k.pending[key(t)] = pw
		return apiError(apierrors.NewInternalError(errors.New("etcdserver: request timed out")))
	case "500 after applying":
		if err := apply(); err != nil {
			k.pending[key(t)] = pw
			return apiError(err)
		}
		k.pending[key(t)] = pw
		return apiError(apierrors.NewInternalError(errors.New("etcdserver: leader changed")))
	case "transport":
		// The client learns nothing about the object, so the write is a failure unverified.
		k.fail(t, pw, false)
		return errors.New("dial tcp 10.0.0.1:443: connect: connection refused")
	default: // "404 gone": the object really went (another actor removed every finalizer).
		if !pw.release {
			k.pending[key(t)] = pw
			return apiError(apierrors.NewConflict(w.res.GroupResource(), t.Name, errors.New("the object has been modified")))
		}
		w.forget(t.Namespace, t.Name)
		return apiError(apierrors.NewNotFound(w.res.GroupResource(), t.Name))
	}
}

// fail records a finalizer write that failed; ok reports a write that turned out fine.
func (k *kube) fail(t kubeapi.Target, pw pendingWrite, ok bool) {
	delete(k.pending, key(t))
	if ok {
		return
	}
	if pw.release {
		k.w.failure("release of " + key(t))
		return
	}
	k.w.finalizerFailed[key(t)] = true
	k.w.groupFailure(pw.group, "finalizer write of "+key(t))
}

func (k *kube) Finalizers(_ context.Context, t kubeapi.Target) ([]string, error) {
	pw, verifying := k.pending[key(t)]
	if k.w.pick("kube get", 0.03, "500") != "" {
		if verifying {
			k.fail(t, pw, false)
		}
		return nil, apiError(apierrors.NewInternalError(errors.New("etcdserver: request timed out")))
	}
	obj, err := k.w.srv.Get(k.w.res, t.Namespace, t.Name)
	if err != nil {
		if verifying {
			gone := apierrors.IsNotFound(err) && pw.release
			k.fail(t, pw, gone)
		}
		return nil, apiError(err)
	}
	if verifying {
		k.fail(t, pw, hasFinalizer(obj) == pw.wanted)
	}
	return finalizers(obj), nil
}

func (k *kube) MergePatchStatus(_ context.Context, t kubeapi.Target, patch []byte) error {
	// A refused status write fails the run (the CR's status is not on record) but stops no prune;
	// a 404 naming the CR means it is gone, which is no failure.
	switch k.w.pick("status patch", 0.05, "409", "404", "500") {
	case "409":
		k.w.failure("status patch of " + key(t))
		return apiError(apierrors.NewConflict(k.w.res.GroupResource(), t.Name, errors.New("the object has been modified")))
	case "404":
		return apiError(apierrors.NewNotFound(k.w.res.GroupResource(), t.Name))
	case "500":
		k.w.failure("status patch of " + key(t))
		return apiError(apierrors.NewInternalError(errors.New("etcdserver: request timed out")))
	}
	_, err := k.w.srv.Patch(k.w.res, t.Namespace, t.Name, "status", fakekube.MergePatchType, patch)
	if err != nil {
		return apiError(err)
	}
	return nil
}

// ---- OpenStack: projects shared by credential groups ----

type osResource struct {
	id          int
	name, owner string
}

// session is one credential group's connection.
type session struct {
	creds   plugin.Credentials
	project string
}

func (*session) Do(context.Context, plugin.Request) (*plugin.Response, error) {
	return nil, errors.New("the state-machine plugin calls its cloud directly")
}

type connector struct{ w *world }

func (c connector) Connect(_ context.Context, creds plugin.Credentials) (plugin.Session, error) {
	c.w.settle(true)
	if c.w.pick("connect", 0.03, "refused") != "" {
		c.w.groupFailure(creds, "connect")
		return nil, errors.New("dial tcp: connection refused")
	}
	return &session{creds: creds, project: c.w.projectOf(creds)}, nil
}

// ---- the plugin ----

// fakePlugin converges one OpenStack resource per CR, named by spec.name, in its group's project,
// marked as owned: by the framework alone, or (perGroup) by its credential group. It never takes
// over a resource another group owns, looks a name up before creating it, and its prune deletes
// what it owns and no desired spec names.
type fakePlugin struct {
	w        *world
	perGroup bool
	policy   plugin.CleanupPolicy
	// current is the group whose readiness was probed last: caches start right after.
	current plugin.Credentials
	// kill, when set, ends the pass at one plugin call; reconciled are the UIDs reconciled.
	kill       *killPoint
	reconciled []string
}

// killPoint is the plugin call (reconcile or prune, counted from 1) at which the hook process is
// killed; again is the pass run after the kill, in which that call times out instead.
type killPoint struct {
	at, calls int
	key       string
	again     bool
}

// killSignal is the panic that ends a killed pass.
type killSignal struct{}

// killed reports whether this call (named key) is where the pass dies: it panics in the killed
// pass, and reports true in the pass run again for the same call, which then times out.
func (p *fakePlugin) killed(key string) bool {
	k := p.kill
	if k == nil {
		return false
	}
	if k.again {
		return key == k.key
	}
	if k.calls++; k.calls == k.at {
		k.key = key
		p.w.logf("  killed in %s", key)
		panic(killSignal{})
	}
	return false
}

func (p *fakePlugin) Metadata() plugin.Metadata {
	return plugin.Metadata{Name: "widgets", Noun: "widget", EnvPrefix: "WIDGET", BindingName: "widgets", PrunePerGroup: p.perGroup}
}

func (p *fakePlugin) CleanupPolicy(bool) plugin.CleanupPolicy { return p.policy }

func (p *fakePlugin) owner(c plugin.Credentials) string {
	if p.perGroup {
		return groupName(c)
	}
	return "openstack-sync"
}

func (p *fakePlugin) WaitForAPI(_ context.Context, s plugin.Session) error {
	c := s.(*session).creds
	p.current = c
	p.w.settle(true)
	if p.w.down[c] {
		p.w.groupFailure(c, "readiness")
		return errors.New("503 Service Unavailable")
	}
	return nil
}

type cache struct{}

func (cache) Close(context.Context) error { return nil }

func (p *fakePlugin) NewCache(context.Context) (plugin.Cache, error) {
	if p.w.pick("cache", 0.01, "fail") != "" {
		p.w.groupFailure(p.current, "cache")
		return nil, errors.New("out of instances")
	}
	return cache{}, nil
}

func (p *fakePlugin) Reconcile(_ context.Context, s plugin.Session, _ plugin.Cache, req plugin.ReconcileRequest) (plugin.Result, error) {
	ss := s.(*session)
	w := p.w
	fail := func(err error) (plugin.Result, error) {
		w.groupFailure(ss.creds, "reconcile "+req.Object.Namespace+"/"+req.Object.Name)
		return plugin.Result{}, err
	}
	if p.killed("reconcile " + req.Object.Namespace + "/" + req.Object.Name) {
		return fail(errors.New("wasm plugin \"widgets\" reconcile: timeout: did not finish within 60s"))
	}
	p.reconciled = append(p.reconciled, req.Object.UID)
	switch w.pick("reconcile", 0.05, "error", "trap", "terminal") {
	case "error":
		return fail(errors.New("transient plugin error"))
	case "trap":
		return fail(errors.New("wasm plugin: reconcile trapped: wasm error: unreachable"))
	case "terminal":
		// A terminal failure stops no prune (its spec is desired, docs/contract.md Decision 17)
		// and never fails the run.
		return plugin.Result{Lifecycle: &plugin.Lifecycle{Available: "False", Reason: plugin.ReasonInvalidConfiguration,
			Message: "the spec cannot work"}}, nil
	}
	if p.policy.UsesFinalizer() {
		// Invariant 6: the finalizer is in place before anything is created for the CR.
		if obj, err := w.srv.Get(w.res, req.Object.Namespace, req.Object.Name); err != nil || !hasFinalizer(obj) {
			w.violate("reconciling %s/%s without the finalizer in place", req.Object.Namespace, req.Object.Name)
		}
	}
	name := rawSpecName(req.Spec)
	for _, r := range w.cloud[ss.project] {
		if r.name != name {
			continue
		}
		if r.owner != p.owner(ss.creds) {
			return fail(fmt.Errorf("%s is owned by %s", name, r.owner))
		}
		return plugin.Result{}, nil
	}
	switch w.pick("create", 0.05, "500", "timeout after creating") {
	case "500":
		return fail(errors.New("POST: 500 Internal Server Error"))
	case "timeout after creating":
		w.create(ss.project, name, p.owner(ss.creds))
		return fail(errors.New("POST: context deadline exceeded"))
	}
	w.create(ss.project, name, p.owner(ss.creds))
	return plugin.Result{}, nil
}

func (p *fakePlugin) Prune(_ context.Context, s plugin.Session, req plugin.PruneRequest) error {
	ss := s.(*session)
	w := p.w
	w.settle(true)
	counts.prunes++
	w.checkPruneAllowed(req.Credentials, p.perGroup)
	if p.killed("prune " + groupName(req.Credentials)) {
		w.failure("prune " + groupName(req.Credentials))
		return errors.New("wasm plugin \"widgets\" prune: timeout: did not finish within 60s")
	}
	if p.perGroup {
		w.checkPruneInput(req)
	}
	if len(req.DesiredSpecs) == 0 && !req.AuthoritativeEmpty {
		return nil
	}
	desired := map[string]bool{}
	for _, spec := range req.DesiredSpecs {
		desired[rawSpecName(spec)] = true
	}
	var errs []error
	for _, r := range slices.Clone(w.cloud[ss.project]) {
		if r.owner != p.owner(ss.creds) || desired[r.name] {
			continue
		}
		switch w.pick("delete", 0.08, "500", "timeout", "timeout after deleting", "409 in use") {
		case "500":
			errs = append(errs, fmt.Errorf("DELETE %d: 500", r.id))
		case "timeout":
			errs = append(errs, fmt.Errorf("DELETE %d: context deadline exceeded", r.id))
		case "timeout after deleting":
			w.delete(ss.project, r)
			errs = append(errs, fmt.Errorf("DELETE %d: context deadline exceeded", r.id))
		case "409 in use":
			errs = append(errs, fmt.Errorf("DELETE %d: 409 in use", r.id))
		default:
			w.delete(ss.project, r)
		}
	}
	if err := errors.Join(errs...); err != nil {
		w.failure("prune " + groupName(req.Credentials))
		return err
	}
	return nil
}

func (p *fakePlugin) Close(context.Context) error { return nil }

// ---- reading objects ----

func groupName(c plugin.Credentials) string {
	return c.Namespace + "/" + c.SecretName + "/" + c.CloudName
}

func groupOf(obj map[string]any) plugin.Credentials {
	md, _ := obj["metadata"].(map[string]any)
	spec, _ := obj["spec"].(map[string]any)
	ref, _ := spec["cloudCredentialsRef"].(map[string]any)
	ns, _ := md["namespace"].(string)
	secret, _ := ref["secretName"].(string)
	cloud, _ := ref["cloudName"].(string)
	return plugin.Credentials{Namespace: ns, SecretName: secret, CloudName: cloud}
}

func specName(obj map[string]any) string {
	spec, _ := obj["spec"].(map[string]any)
	n, _ := spec["name"].(string)
	return n
}

func finalizers(obj map[string]any) []string {
	md, _ := obj["metadata"].(map[string]any)
	list, _ := md["finalizers"].([]any)
	var out []string
	for _, f := range list {
		if s, ok := f.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func hasFinalizer(obj map[string]any) bool {
	return slices.Contains(finalizers(obj), resource.Finalizer)
}

// rawSpecName is spec.name of a spec as the host hands it over (JSON).
func rawSpecName(raw json.RawMessage) string {
	var spec struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(raw, &spec)
	return spec.Name
}
