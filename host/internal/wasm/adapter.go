package wasm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/pdk/abi"
)

var _ plugin.Deleter = (*Plugin)(nil)

// ReconcileConcurrency implements plugin.Concurrent: the pool never lets two goroutines share an
// instance, and every group cache pins an instance of its own.
func (p *Plugin) ReconcileConcurrency() int { return p.opts.Concurrency }

var _ plugin.Concurrent = (*Plugin)(nil)

// Metadata implements plugin.Plugin.
func (p *Plugin) Metadata() plugin.Metadata { return p.meta }

// CleanupPolicy implements plugin.Plugin from the policies the plugin declared.
func (p *Plugin) CleanupPolicy(prune bool) plugin.CleanupPolicy {
	if prune {
		return p.whenPrune
	}
	return p.whenNoPrune
}

var v1Envelope = []byte(`{"abi_version":1}`)

// WaitForAPI implements plugin.Plugin.
func (p *Plugin) WaitForAPI(ctx context.Context, s plugin.Session) error {
	ci := &callInfo{entry: abi.EntryWaitForAPI, session: s, log: p.log}
	_, err := p.once(ctx, ci, v1Envelope)
	return finish(ci, err)
}

// once runs one call of a credential group outside its cache (readiness, prune) on the instance
// that group's last call left (pool.park), else on a fresh one; nothing the guest saw of one group
// can reach another group's calls (instance.admits). After readiness the instance is kept for the
// group's cache; a prune is the group's last call, and its instance is retired.
func (p *Plugin) once(ctx context.Context, ci *callInfo, input []byte) ([]byte, error) {
	inst, err := p.pool.getFor(ctx, groupKey(ci.session), sameGroup)
	if err != nil {
		return nil, fmt.Errorf("wasm plugin %q %s: %w", p.name, ci.entry, err)
	}
	defer func() {
		if ci.entry == abi.EntryWaitForAPI {
			p.pool.park(ctx, inst, true)
		} else {
			p.pool.retire(ctx, inst)
		}
	}()
	return p.invoke(ctx, inst, ci, input)
}

// groupCache pins one instance to a credential group, so what the plugin caches in guest memory
// is shared by the group's reconciles and by nothing else.
type groupCache struct {
	p    *Plugin
	inst *instance
	done bool
	// first: a cache from NewCache before its first instance, which may be the parked one.
	first bool
}

// NewCache implements plugin.Plugin: it checks out an instance and opens the group on it.
func (p *Plugin) NewCache(ctx context.Context) (plugin.Cache, error) {
	g := &groupCache{p: p, first: true}
	if err := g.ensure(ctx); err != nil {
		return nil, err
	}
	return g, nil
}

// ensure gives the group an instance with the group opened, replacing one discarded after a
// failure (its cache is lost with it, which only costs reads).
func (g *groupCache) ensure(ctx context.Context) error {
	if g.inst != nil {
		return nil
	}
	// The runner probes a group's readiness right before it opens the group's cache: the
	// probe's instance is the cache's first, and admits refuses its calls should they be
	// another group's.
	want := freshInstance
	if g.first {
		g.first, want = false, afterReadiness
	}
	inst, err := g.p.pool.getFor(ctx, nil, want)
	if err != nil {
		return fmt.Errorf("wasm plugin %q %s: %w", g.p.name, abi.EntryGroupBegin, err)
	}
	if g.p.hasGroup {
		if _, err := g.p.invoke(ctx, inst, &callInfo{entry: abi.EntryGroupBegin, log: g.p.log}, v1Envelope); err != nil {
			inst.broken = true
			g.p.pool.put(ctx, inst)
			return err
		}
	}
	g.inst = inst
	return nil
}

// release returns the group's instance when a call broke it.
func (g *groupCache) release(ctx context.Context) {
	if g.inst != nil && g.inst.broken {
		g.p.pool.put(ctx, g.inst)
		g.inst = nil
	}
}

// Close implements plugin.Cache: it closes the group in the guest and keeps the instance for the
// group's prune only (pool.park, instance.admits), so guest memory (globals, vars, the pdk's cache)
// never reaches another credential group.
func (g *groupCache) Close(ctx context.Context) error {
	if g.done {
		return nil
	}
	g.done = true
	if g.inst == nil {
		return nil
	}
	var err error
	if g.p.hasGroup {
		_, err = g.p.invoke(ctx, g.inst, &callInfo{entry: abi.EntryGroupEnd, log: g.p.log}, v1Envelope)
		if err != nil {
			g.inst.broken = true
		}
	}
	g.p.pool.park(ctx, g.inst, false)
	g.inst = nil
	return err
}

// Reconcile implements plugin.Plugin. With a cache from NewCache it runs on the group's instance;
// without one it opens and closes a group of its own around the call.
func (p *Plugin) Reconcile(ctx context.Context, s plugin.Session, c plugin.Cache, req plugin.ReconcileRequest) (plugin.Result, error) {
	return p.perCR(ctx, abi.EntryReconcile, s, c, req)
}

// Delete implements plugin.Deleter: the CR being deleted, with its last spec and status, goes to
// the plugin's delete entry point on the group's instance, as Reconcile does.
func (p *Plugin) Delete(ctx context.Context, s plugin.Session, c plugin.Cache, req plugin.ReconcileRequest) (plugin.Result, error) {
	if !p.meta.HasDelete {
		return plugin.Result{}, fmt.Errorf("wasm plugin %q %s: the plugin has no delete step", p.name, abi.EntryDelete)
	}
	return p.perCR(ctx, abi.EntryDelete, s, c, req)
}

// perCR runs an entry point that takes one CR and returns a result message.
func (p *Plugin) perCR(ctx context.Context, entry string, s plugin.Session, c plugin.Cache, req plugin.ReconcileRequest) (plugin.Result, error) {
	obj := req.Object
	ci := &callInfo{entry: entry, session: s, object: &obj,
		log: p.log.With("kind", obj.Kind, "cr", obj.Namespace+"/"+obj.Name)}
	// Only what the plugin reads: decoding the rest was most of a converged CR's input.
	status := p.declared.statusFor(req.Status)
	msg := abi.ReconcileInput{ABIVersion: abi.Version, Object: abiObject(obj), Spec: req.Spec, Status: status}
	if p.meta.PrunePerGroup {
		// Its ownership marker records the group, so its reconcile must know which it writes.
		c := req.Credentials
		msg.Credentials = &abi.Credentials{Namespace: c.Namespace, SecretName: c.SecretName, CloudName: c.CloudName}
	}
	input, err := json.Marshal(msg)
	if err != nil {
		return plugin.Result{}, fmt.Errorf("wasm plugin %q %s: encoding the request: %w", p.name, entry, err)
	}
	g, ok := c.(*groupCache)
	if !ok || g.p != p || g.done {
		g = &groupCache{p: p}
		defer g.Close(ctx)
	}
	if err := g.ensure(ctx); err != nil {
		return plugin.Result{}, err
	}
	if p.memo != nil && entry == abi.EntryReconcile && obj.UID != "" {
		ci.memo = &memoCall{store: p.memo, uid: obj.UID, input: input}
	}
	out, err := p.invoke(ctx, g.inst, ci, input)
	var res abi.Result
	var lc *plugin.Lifecycle
	if err == nil && len(out) > 0 {
		jerr := json.Unmarshal(out, &res)
		if jerr == nil && res.Unchanged {
			out, jerr = ci.memo.replay()
			if jerr == nil {
				res = abi.Result{}
				jerr = json.Unmarshal(out, &res)
			}
		}
		if jerr == nil {
			lc, jerr = toPlugin(res.Lifecycle)
		}
		if jerr != nil {
			// A guest that writes garbage is not trusted with the next CR either.
			g.inst.broken = true
			err = &CallError{Plugin: p.name, Entry: entry, Kind: "protocol",
				Detail: "output is not a valid result message: " + jerr.Error(), Err: jerr}
			ci.log.Error("plugin call failed; its instance is discarded", "entry", ci.entry, "error", err.Error())
		}
	}
	ci.memo.settle(err == nil, out, lc)
	g.release(ctx)
	if err != nil {
		return plugin.Result{}, finish(ci, err)
	}
	if entry == abi.EntryDelete && lc == nil {
		// Without a lifecycle outcome the host cannot know the resource is gone: keep the finalizer.
		return plugin.Result{}, finish(ci, &CallError{Plugin: p.name, Entry: entry, Kind: "protocol",
			Detail: "a delete must report its outcome in the lifecycle status"})
	}
	return plugin.Result{Notes: res.Notes, ExtraStatus: res.ExtraStatus, Lifecycle: lc}, finish(ci, nil)
}

// Prune implements plugin.Plugin.
func (p *Plugin) Prune(ctx context.Context, s plugin.Session, req plugin.PruneRequest) error {
	if !p.hasPrune {
		return fmt.Errorf("wasm plugin %q %s: the plugin has no prune step", p.name, abi.EntryPrune)
	}
	desired := req.DesiredSpecs
	if desired == nil {
		desired = []json.RawMessage{}
	}
	input, err := json.Marshal(abi.PruneInput{ABIVersion: abi.Version, Credentials: abi.Credentials{
		Namespace: req.Credentials.Namespace, SecretName: req.Credentials.SecretName, CloudName: req.Credentials.CloudName},
		DesiredSpecs: desired, AuthoritativeEmpty: req.AuthoritativeEmpty})
	if err != nil {
		return fmt.Errorf("wasm plugin %q %s: encoding the request: %w", p.name, abi.EntryPrune, err)
	}
	ci := &callInfo{entry: abi.EntryPrune, session: s, log: p.log.With("namespace", req.Credentials.Namespace,
		"secret", req.Credentials.SecretName, "cloud", req.Credentials.CloudName)}
	_, err = p.once(ctx, ci, input)
	return finish(ci, err)
}

// Close implements plugin.Plugin: instances, runtime, then the compilation cache (which must
// outlive every runtime that used it).
func (p *Plugin) Close(ctx context.Context) error {
	var errs []error
	if p.pool != nil {
		p.pool.close(ctx)
	}
	if p.memo != nil {
		if err := p.memo.save(); err != nil {
			// A cache: the next run reconciles in full what this one could not record.
			p.log.Warn("cannot write the convergence memo; the next run reconciles every CR in full",
				"file", p.memo.path(), "error", err.Error())
		}
		p.memoMissed = p.memo.Misses()
		p.memo = nil
	}
	if p.runtime != nil {
		errs = append(errs, p.runtime.Close(ctx))
		p.runtime = nil
	}
	if p.cache != nil {
		errs = append(errs, p.cache.Close(ctx))
		p.cache = nil
	}
	return errors.Join(errs...)
}

var _ plugin.Remarker = (*Plugin)(nil)

// abiObject is obj as the ABI's messages carry it.
func abiObject(obj plugin.Object) abi.Object {
	return abi.Object{APIVersion: obj.APIVersion, Kind: obj.Kind, Namespace: obj.Namespace, Name: obj.Name,
		UID: obj.UID, Generation: obj.Generation}
}

// Remark implements plugin.Remarker: one call outside any group, like a prune.
func (p *Plugin) Remark(ctx context.Context, s plugin.Session, req plugin.RemarkRequest) (plugin.RemarkResult, error) {
	if !p.declared.HasRemark {
		return plugin.RemarkResult{}, fmt.Errorf("wasm plugin %q %s: the plugin cannot move its markers between profiles", p.name, abi.EntryRemark)
	}
	obj := req.Object
	input, err := json.Marshal(abi.RemarkInput{ABIVersion: abi.Version, Object: abiObject(obj), Spec: req.Spec,
		From: req.From, To: req.To, DryRun: req.DryRun})
	if err != nil {
		return plugin.RemarkResult{}, fmt.Errorf("wasm plugin %q %s: encoding the request: %w", p.name, abi.EntryRemark, err)
	}
	ci := &callInfo{entry: abi.EntryRemark, session: s, object: &obj, log: p.log.With("kind", obj.Kind, "cr", obj.Namespace+"/"+obj.Name)}
	out, err := p.once(ctx, ci, input)
	if err != nil {
		return plugin.RemarkResult{}, finish(ci, err)
	}
	var res abi.RemarkResult
	if len(out) > 0 {
		if derr := json.Unmarshal(out, &res); derr != nil {
			return plugin.RemarkResult{}, finish(ci, &CallError{Plugin: p.name, Entry: abi.EntryRemark, Kind: "protocol",
				Detail: "output is not a remark result: " + derr.Error()})
		}
	}
	return plugin.RemarkResult{Changes: res.Changes, Notes: res.Notes}, finish(ci, nil)
}
