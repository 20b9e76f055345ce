package conformance

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openstack-sync/openstack-sync/host/internal/fakecloud"
	"github.com/openstack-sync/openstack-sync/host/internal/hookenv"
	"github.com/openstack-sync/openstack-sync/host/internal/modulecache"
	"github.com/openstack-sync/openstack-sync/host/internal/openstack"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/runcmd"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm"
	"github.com/openstack-sync/openstack-sync/pdk/abi/grant"
)

// refusedLog is the host's log message for a request outside the grants.
const refusedLog = "OpenStack request refused"

// Run checks the contract with Check and reports each part as a subtest: a problem fails it.
// An incomplete suite (no plugin, fewer than two CRs for a plugin that reconciles CRs) fails too.
func (s Suite) Run(t *testing.T) {
	t.Helper()
	r := s.Check(context.Background())
	for _, p := range r.Parts {
		t.Run(p.Name, func(t *testing.T) {
			for _, n := range p.Notes {
				t.Log(n)
			}
			for _, problem := range p.Problems {
				t.Error(problem)
			}
		})
	}
}

// Report is what Check found, part by part, in the order they ran.
type Report struct {
	Parts []Part
}

// Part is one part of the contract: metadata, readiness (a probe's), converge, memo, cleanup, grants or
// bad specs. A part that could not run after an earlier one failed is absent.
type Part struct {
	Name string
	// Problems break the contract; Notes are for the author's information.
	Problems, Notes []string
}

// OK reports whether no part found a problem.
func (r Report) OK() bool {
	for _, p := range r.Parts {
		if len(p.Problems) > 0 {
			return false
		}
	}
	return true
}

// Problems lists every problem as "part: problem".
func (r Report) Problems() []string {
	var out []string
	for _, p := range r.Parts {
		for _, problem := range p.Problems {
			out = append(out, p.Name+": "+problem)
		}
	}
	return out
}

// Check runs the contract against the plugin and reports what each part found.
func (s Suite) Check(ctx context.Context) Report {
	var r Report
	var cleanups []func()
	defer func() {
		for _, f := range slices.Backward(cleanups) {
			f()
		}
	}()
	// run runs one part; it reports whether the part found no problem.
	run := func(name string, f func(*part)) bool {
		p := &part{cleanup: &cleanups}
		func() {
			defer func() {
				if v := recover(); v != nil && v != errStop {
					panic(v)
				}
			}()
			f(p)
		}()
		r.Parts = append(r.Parts, Part{Name: name, Problems: p.problems, Notes: p.notes})
		return len(p.problems) == 0
	}
	var info wasm.Info
	if !run("metadata", func(p *part) {
		if s.Plugin == "" {
			p.Fatalf("the suite names no plugin module (Suite.Plugin)")
		}
		info = checkMetadata(p, ctx, s.Plugin)
	}) {
		return r
	}
	k := &kit{Suite: s, info: info}
	if info.Probe {
		run("readiness", k.probeReadiness)
		return r
	}
	if !run("suite", func(p *part) {
		switch {
		case len(s.CRs) < 2:
			p.Errorf("plugin %s: the suite needs at least two CRs (it has %d)", info.Name, len(s.CRs))
		case s.APIVersion == "" || s.Kind == "":
			p.Errorf("plugin %s: the suite needs the CRD's apiVersion and kind", info.Name)
		default:
			k.start(p)
		}
	}) {
		return r
	}
	if !run("converge", k.converge) {
		return r
	}
	run("memo", k.memo)
	run("cleanup", k.cleanup)
	run("grants", k.grants)
	run("bad specs", k.badSpecs)
	return r
}

// errStop ends a part at its first fatal problem.
var errStop = errors.New("conformance: part stopped")

// part collects the problems and notes of one part.
type part struct {
	problems, notes []string
	cleanup         *[]func()
}

func (p *part) Errorf(format string, args ...any) {
	p.problems = append(p.problems, fmt.Sprintf(format, args...))
}
func (p *part) Logf(format string, args ...any) {
	p.notes = append(p.notes, fmt.Sprintf(format, args...))
}
func (p *part) Fatalf(format string, args ...any) { p.Errorf(format, args...); panic(errStop) }
func (p *part) Failed() bool                      { return len(p.problems) > 0 }
func (p *part) Cleanup(f func())                  { *p.cleanup = append(*p.cleanup, f) }

// tempDir is a folder removed when the check ends.
func (p *part) tempDir() string {
	dir, err := os.MkdirTemp("", "openstack-sync-conformance-*")
	if err != nil {
		p.Fatalf("conformance: %v", err)
	}
	p.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func checkMetadata(t *part, ctx context.Context, path string) wasm.Info {
	info, err := wasm.Inspect(ctx, path, wasm.Options{Logger: slog.New(slog.DiscardHandler), LookupEnv: noEnv})
	if err != nil {
		var le *wasm.LoadError
		if errors.As(err, &le) && len(le.Problems) > 0 {
			t.Fatalf("the module fails the host's load-time checks:\n  - %s", strings.Join(le.Problems, "\n  - "))
		}
		t.Fatalf("the module fails the host's load-time checks: %v", err)
	}
	for field, v := range map[string]string{"name": info.Name, "noun": info.Noun, "env_prefix": info.EnvPrefix} {
		if v == "" && !(info.Probe && field == "noun") {
			t.Errorf("metadata: %s is empty", field)
		}
	}
	if info.Version == "" {
		t.Logf("metadata: %s declares no version; `plugin inspect` and the registry show none", info.Name)
	}
	return info
}

// noEnv reads only the sandbox settings and the compilation cache's location from the shell.
var noEnv = runcmd.ShellSandbox(nil)

// settings are the suite's hook settings as the plugin's config sees them (<PREFIX>_KEY), and
// the shell's sandbox settings.
func (k *kit) settings(name string) (string, bool) {
	env := map[string]string{}
	for key, v := range k.Settings {
		env[k.info.EnvPrefix+"_"+key] = v
	}
	return runcmd.ShellSandbox(env)(name)
}

// kit is one run of a suite: the cloud, the CRs as the last pass left them and what every pass
// asked of OpenStack.
type kit struct {
	Suite
	info   wasm.Info
	cloud  *fakecloud.Cloud
	clouds []byte
	// unowned are the ids of the resources made by hand.
	unowned []string
	// owned maps a CR name to the ids its creation made.
	owned map[string][]string
	// state is each CR as the last pass left it (status, finalizers).
	state map[string]map[string]any
	// logs and calls of every pass, for the grant check.
	logs  bytes.Buffer
	calls []runcmd.Call
	// made maps a CR name to the service and path of each resource its creation made.
	made map[string][]madeResource
	// memoDir, when set, turns the convergence memo on for the passes (the memo part).
	memoDir string
	// sources and secrets serve the suite's Nautobot to the passes (startNautobot).
	sources []hookenv.Source
	secrets map[string]map[string][]byte
}

type madeResource struct{ service, path, microversion string }

func (k *kit) cloudName() string { return cmp.Or(k.Cloud, AdminCloud) }

// start brings the in-process cloud up with the suite's collections and unowned resources.
func (k *kit) start(t *part) {
	k.cloud = fakecloud.New(fakecloud.Options{IronicMaxVersion: k.IronicMaxVersion})
	t.Cleanup(k.cloud.Close)
	for _, col := range k.Collections {
		err := k.cloud.AddCollection(col)
		switch {
		case errors.Is(err, fakecloud.ErrKnown):
			t.Logf("conformance: %v (remove it from the suite's collections)", err)
		case err != nil:
			t.Fatalf("conformance: %v", err)
		}
	}
	k.clouds = []byte(k.cloud.CloudsYAML())
	k.owned, k.state = map[string][]string{}, map[string]map[string]any{}
	k.startNautobot(t)
	s := k.session(t)
	for _, u := range k.Unowned {
		req := plugin.Request{Service: u.Service, Method: cmp.Or(u.Method, http.MethodPost), Path: strings.TrimPrefix(u.Path, "/"),
			Microversion: u.Microversion, Header: http.Header{"Content-Type": {"application/json"}}}
		if u.Body != nil {
			req.Body, _ = json.Marshal(u.Body)
		}
		resp, err := s.Do(context.Background(), req)
		if err != nil || resp.StatusCode/100 != 2 {
			t.Fatalf("conformance: making the unowned resource %s %s: %v %s", req.Method, req.Path, err, responseText(resp))
		}
		var obj map[string]any
		_ = json.Unmarshal(resp.Body, &obj)
		if id := idOf(obj); id != "" {
			k.unowned = append(k.unowned, id)
		} else {
			t.Fatalf("conformance: the answer to %s %s names no id: %s", req.Method, req.Path, resp.Body)
		}
	}
}

func responseText(r *plugin.Response) string {
	if r == nil {
		return ""
	}
	return fmt.Sprintf("%d %s", r.StatusCode, r.Body)
}

// idOf reads the id of a Neutron ({"x": {"id"}}) or Ironic ({"uuid"}) answer.
func idOf(obj map[string]any) string {
	if len(obj) == 1 {
		for _, v := range obj {
			if inner, ok := v.(map[string]any); ok {
				obj = inner
			}
		}
	}
	for _, k := range []string{"id", "uuid"} {
		if id, ok := obj[k].(string); ok {
			return id
		}
	}
	return ""
}

type secrets []byte

func (s secrets) GetSecretData(context.Context, string, string) (map[string][]byte, error) {
	return map[string][]byte{"clouds.yaml": s}, nil
}

// session is the kit's own session with the suite's cloud.
func (k *kit) session(t *part) plugin.Session {
	conn := openstack.NewConnector(secrets(k.clouds), openstack.Options{Plugin: "conformance",
		Logger: slog.New(slog.DiscardHandler), MaxAttempts: 1})
	s, err := conn.Connect(context.Background(), plugin.Credentials{Namespace: "conformance", SecretName: "clouds", CloudName: k.cloudName()})
	if err != nil {
		t.Fatalf("conformance: connecting to the in-process cloud: %v", err)
	}
	return s
}

// pass runs one hook pass over the named live CRs and deleted ones, from their last state.
func (k *kit) pass(t *part, live, deleted []string) runcmd.Outcome {
	objs := func(names []string) []map[string]any {
		var out []map[string]any
		for _, n := range names {
			out = append(out, k.object(n))
		}
		return out
	}
	var log bytes.Buffer
	out, err := runcmd.Pass{Plugin: k.Plugin, Clouds: k.clouds, Cloud: k.cloudName(), Namespace: "conformance", Prune: true,
		Set: k.Settings, Live: objs(live), Deleted: objs(deleted), Log: &log, LogLevel: "info", MemoDir: k.memoDir,
		Sources: k.sources, Secrets: k.secrets}.Run(context.Background())
	if err != nil {
		t.Fatalf("conformance: running the hook: %v", err)
	}
	k.logs.Write(log.Bytes())
	k.calls = append(k.calls, out.Calls...)
	for _, cr := range out.CRs {
		k.state[cr["metadata"].(map[string]any)["name"].(string)] = cr
	}
	if t.Failed() || out.Code != 0 {
		t.Logf("hook log:\n%s", log.String())
	}
	return out
}

// object is a CR as the last pass left it, or a new one.
func (k *kit) object(name string) map[string]any {
	if obj, ok := k.state[name]; ok {
		return deepCopy(obj)
	}
	i := slices.IndexFunc(k.CRs, func(c CR) bool { return c.Name == name })
	return map[string]any{"apiVersion": k.APIVersion, "kind": k.Kind,
		"metadata": map[string]any{"name": name, "namespace": "conformance"}, "spec": deepCopy(k.CRs[i].Spec)}
}

func deepCopy(m map[string]any) map[string]any {
	b, _ := json.Marshal(m)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	if out == nil {
		out = map[string]any{}
	}
	return out
}

func (k *kit) names() []string {
	var out []string
	for _, c := range k.CRs {
		out = append(out, c.Name)
	}
	return out
}

func writes(calls []runcmd.Call) []string {
	var out []string
	for _, c := range calls {
		if c.Method != http.MethodGet && c.Method != http.MethodHead {
			out = append(out, c.Method+" "+c.Service+" "+c.Path)
		}
	}
	return out
}

func syncStatus(obj map[string]any) (string, string) {
	st, _ := obj["status"].(map[string]any)
	s, _ := st["syncStatus"].(string)
	m, _ := st["message"].(string)
	return s, m
}

// converge creates the CRs one at a time (so what each made is known), checks they are Synced,
// then runs a pass over all of them that must write nothing.
func (k *kit) converge(t *part) {
	names := k.names()
	for i, name := range names {
		out := k.pass(t, names[:i+1], nil)
		if out.Code != 0 {
			t.Fatalf("creating CR %s: the hook exited %d", name, out.Code)
		}
		k.recordMade(name, out.Calls)
		if s, msg := syncStatus(k.state[name]); s != "Synced" {
			t.Fatalf("CR %s: syncStatus %q, want Synced: %s", name, s, msg)
		}
		if i > 0 && len(k.owned[name]) == 0 && len(writes(out.Calls)) == 0 {
			t.Logf("CR %s made nothing: are the CRs' OpenStack names distinct?", name)
		}
	}
	out := k.pass(t, names, nil)
	if out.Code != 0 {
		t.Fatalf("second pass: the hook exited %d", out.Code)
	}
	if w := writes(out.Calls); len(w) > 0 {
		t.Errorf("a second pass over converged CRs must write nothing; it sent:\n  %s", strings.Join(w, "\n  "))
	}
}

// recordMade keeps what the CR's pass created: its id for the cleanup part, its path for the
// memo part.
func (k *kit) recordMade(name string, calls []runcmd.Call) {
	for _, c := range calls {
		if c.Created != "" {
			k.owned[name] = append(k.owned[name], c.Created)
			if k.made == nil {
				k.made = map[string][]madeResource{}
			}
			k.made[name] = append(k.made[name], madeResource{c.Service, strings.TrimSuffix(c.Path, "/") + "/" + c.Created, c.Microversion})
		}
	}
}

// memo checks a plugin's use of the convergence memo (docs/abi.md): with the memo on, converged
// CRs stay converged without a write and with the statuses of a full pass, and a resource deleted
// by hand is still noticed. A plugin whose evidence missed its resource (the spec alone, a
// constant) would answer that CR from the memo and never make it again.
func (k *kit) memo(t *part) {
	k.memoDir = t.tempDir()
	defer func() { k.memoDir = "" }()
	names := k.names()
	before := map[string]map[string]any{}
	for _, n := range names {
		before[n] = k.state[n]
	}
	for i := range 2 {
		out := k.pass(t, names, nil)
		if w := writes(out.Calls); out.Code != 0 || len(w) > 0 {
			t.Fatalf("with the convergence memo, pass %d over converged CRs exited %d and sent:\n  %s", i+1, out.Code, strings.Join(w, "\n  "))
		}
		for _, n := range names {
			if a, b := statusOutcome(before[n]), statusOutcome(k.state[n]); a != b {
				t.Errorf("with the convergence memo, pass %d changed CR %s's status from %s to %s", i+1, n, a, b)
			}
		}
	}
	if entries, _ := filepath.Glob(filepath.Join(k.memoDir, modulecache.Memo.Dir, "*"+modulecache.Memo.Ext)); len(entries) == 0 {
		t.Logf("the plugin does not use the convergence memo (docs/abi.md): every converged CR is reconciled in full")
		return
	}
	first := names[0]
	made := k.made[first]
	if len(made) == 0 {
		t.Logf("CR %s made nothing the kit could delete by hand; the memo's drift check is skipped", first)
		return
	}
	s := k.session(t)
	deleted := 0
	for _, r := range slices.Backward(made) {
		resp, err := s.Do(context.Background(), plugin.Request{Service: r.service, Method: http.MethodDelete, Path: r.path,
			Microversion: r.microversion})
		if err == nil && resp.StatusCode/100 == 2 {
			deleted++
		}
	}
	if deleted == 0 {
		t.Logf("none of what CR %s made could be deleted by hand; the memo's drift check is skipped", first)
		return
	}
	out := k.pass(t, names, nil)
	k.recordMade(first, out.Calls)
	if len(writes(out.Calls)) == 0 && statusOutcome(k.state[first]) == statusOutcome(before[first]) {
		t.Errorf("CR %s was answered as before after what it made (%d resources) was deleted by hand: the evidence it gives "+
			"the convergence memo must be the OpenStack state its verdict rests on (docs/abi.md)", first, deleted)
	}
	// Converge again for the parts that follow.
	if out = k.pass(t, names, nil); out.Code != 0 {
		t.Fatalf("converging again after the drift check: the hook exited %d", out.Code)
	}
	k.recordMade(first, out.Calls)
}

// statusOutcome is what a status says, without its timestamps.
func statusOutcome(obj map[string]any) string {
	st, _ := obj["status"].(map[string]any)
	cp := map[string]any{}
	for k, v := range st {
		if k != "lastSyncTime" && k != "conditions" {
			cp[k] = v
		}
	}
	if conds, ok := st["conditions"].([]any); ok {
		var out []any
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok {
				m = maps.Clone(m)
				delete(m, "lastTransitionTime")
				out = append(out, m)
			}
		}
		cp["conditions"] = out
	}
	b, _ := json.Marshal(cp)
	return string(b)
}

// cleanup deletes the last CR with PRUNE=true.
func (k *kit) cleanup(t *part) {
	names := k.names()
	gone, kept := names[len(names)-1], names[:len(names)-1]
	out := k.pass(t, kept, []string{gone})
	if out.Code != 0 {
		t.Fatalf("deleting CR %s: the hook exited %d", gone, out.Code)
	}
	var others []string
	for _, n := range kept {
		others = append(others, k.owned[n]...)
	}
	deleted := 0
	for _, c := range out.Calls {
		if c.Method != http.MethodDelete {
			continue
		}
		deleted++
		if slices.ContainsFunc(strings.Split(c.Path, "/"), func(seg string) bool { return slices.Contains(others, seg) }) {
			t.Errorf("DELETE %s %s: a resource of a CR that still exists was deleted", c.Service, c.Path)
		}
	}
	// Every pass prunes (PRUNE=true), so an unowned resource may go in any of them.
	for _, c := range k.calls {
		if c.Method == http.MethodDelete &&
			slices.ContainsFunc(strings.Split(c.Path, "/"), func(seg string) bool { return slices.Contains(k.unowned, seg) }) {
			t.Errorf("DELETE %s %s: a resource made by hand (unowned) was deleted", c.Service, c.Path)
		}
	}
	policy := k.info.Cleanup.WhenPrune
	if policy != plugin.CleanupNone.String() && deleted == 0 && len(k.owned[gone]) > 0 {
		t.Errorf("cleanup policy %s with PRUNE=true: deleting CR %s deleted none of what it made (%s)",
			policy, gone, strings.Join(k.owned[gone], ", "))
	}
	if policy == plugin.CleanupFinalizedPrune.String() || k.info.HasPrune {
		md, _ := k.state[gone]["metadata"].(map[string]any)
		if fs, _ := md["finalizers"].([]any); len(fs) > 0 {
			t.Errorf("CR %s: finalizers %v still held after a successful cleanup", gone, fs)
		}
	}
	// What the remaining CRs own is still there: they converge without a write.
	out = k.pass(t, kept, nil)
	if w := writes(out.Calls); out.Code != 0 || len(w) > 0 {
		t.Errorf("after the cleanup the remaining CRs must still be converged; the hook exited %d and sent:\n  %s",
			out.Code, strings.Join(w, "\n  "))
	}
}

// grants checks that no request of any pass was refused by the declared grants, and that every
// request sent is one they allow.
func (k *kit) grants(t *part) {
	if strings.Contains(k.logs.String(), refusedLog) {
		var lines []string
		for _, l := range strings.Split(k.logs.String(), "\n") {
			if strings.Contains(l, refusedLog) {
				lines = append(lines, l)
			}
		}
		t.Errorf("requests outside the declared grants:\n%s", strings.Join(lines, "\n"))
	}
	set := grant.NewSet(k.info.Grants, nil)
	for _, c := range k.calls {
		if !set.Allows(c.Service, c.Method, c.Path) {
			t.Errorf("%s %s %s is outside the declared grants", c.Method, c.Service, c.Path)
		}
	}
}

// probeReadiness runs a probe's readiness check against the in-process cloud within its grants.
func (k *kit) probeReadiness(t *part) {
	k.start(t)
	var log bytes.Buffer
	p, err := wasm.Load(context.Background(), k.Plugin, wasm.Options{LookupEnv: k.settings,
		Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatalf("loading the plugin: %v", err)
	}
	defer p.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.WaitForAPI(ctx, k.session(t)); err != nil {
		t.Errorf("readiness against the in-process cloud: %v", err)
	}
	if strings.Contains(log.String(), refusedLog) {
		t.Errorf("requests outside the declared grants:\n%s", log.String())
	}
}

// badSpecs sends bad variants of the first CR's spec straight to Reconcile in the host runtime.
func (k *kit) badSpecs(t *part) {
	good := k.CRs[0].Spec
	long := strings.Repeat("x", cmp.Or(k.LongString, 256<<10))
	type variant struct {
		name string
		spec map[string]any
		// mayPass: a long string may be fine for the plugin; it must only not break it.
		mayPass bool
		// fix says what to do when the plugin accepts it.
		fix string
	}
	variants := []variant{{name: "empty spec", spec: map[string]any{}}}
	unknown := maps.Clone(good)
	unknown["conformanceUnknownField"] = "x"
	variants = append(variants, variant{name: `unknown field "conformanceUnknownField" at the top of spec`, spec: unknown,
		fix: "decode the spec strictly (pdk.ReconcileRequest.DecodeSpec, or lifecycle.DecodeFields), which refuses a field the spec type does not declare"})
	if res, ok := good["resource"].(map[string]any); ok {
		// A lifecycle plugin's own fields are under spec.resource.
		inner := maps.Clone(res)
		inner["conformanceUnknownField"] = "x"
		withInner := maps.Clone(good)
		withInner["resource"] = inner
		variants = append(variants, variant{name: `unknown field "conformanceUnknownField" in spec.resource`, spec: withInner,
			fix: "decode spec.resource strictly (lifecycle.DecodeFields does), so a misspelt field is an error rather than ignored"})
	}
	for _, f := range slices.Sorted(maps.Keys(good)) {
		wrong := maps.Clone(good)
		wrong[f] = wrongType(good[f])
		variants = append(variants, variant{name: "wrong type in " + f, spec: wrong})
		if _, isString := good[f].(string); isString {
			l := maps.Clone(good)
			l[f] = long
			variants = append(variants, variant{name: "long string in " + f, spec: l, mayPass: true})
		}
	}
	var log bytes.Buffer
	ctx := context.Background()
	p, err := wasm.Load(ctx, k.Plugin, wasm.Options{LookupEnv: k.settings,
		Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatalf("loading the plugin: %v", err)
	}
	defer p.Close(ctx)
	s := k.withSources(t, k.session(t))
	reconcile := func(name string, spec map[string]any) (plugin.Result, error) {
		cache, err := p.NewCache(ctx)
		if err != nil {
			return plugin.Result{}, err
		}
		defer cache.Close(ctx)
		gen := int64(1)
		raw, err := json.Marshal(spec)
		if err != nil {
			return plugin.Result{}, err
		}
		// The group of the passes' CRs (runcmd): a plugin that prunes per group records it, and
		// fails a CR whose resource another group owns.
		return p.Reconcile(ctx, s, cache, plugin.ReconcileRequest{Spec: raw, Object: plugin.Object{
			APIVersion: k.APIVersion, Kind: k.Kind, Namespace: "conformance", Name: name, UID: "conformance-" + name, Generation: &gen},
			Credentials: plugin.Credentials{Namespace: "conformance", SecretName: runcmd.SecretName, CloudName: k.cloudName()}})
	}
	for _, v := range variants {
		res, err := reconcile("bad", v.spec)
		var ce *wasm.CallError
		switch {
		case errors.As(err, &ce):
			t.Errorf("%s: the plugin broke (%s) instead of returning an error: %v", v.name, ce.Kind, err)
		case err == nil && !v.mayPass && (res.Lifecycle == nil || res.Lifecycle.Reason == plugin.ReasonSuccess):
			if v.fix != "" {
				t.Errorf("%s: accepted; a bad spec must give an error: %s", v.name, v.fix)
			} else {
				t.Errorf("%s: accepted; a bad spec must give an error", v.name)
			}
		}
	}
	if _, err := reconcile(k.CRs[0].Name, good); err != nil {
		t.Errorf("after the bad specs the good spec of CR %s fails: %v", k.CRs[0].Name, err)
	}
}

// wrongType is a value of another JSON type than v.
func wrongType(v any) any {
	switch v.(type) {
	case string:
		return 12345
	case map[string]any, []any:
		return "not-an-object-or-list"
	}
	return map[string]any{"wrong": "type"}
}
