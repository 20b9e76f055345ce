package wasm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/openstack-sync/openstack-sync/host/internal/modulecache"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm/admission"
)

// Watch is told when guest code starts and stops running (Options.Watch). Begin is called just
// before guest code runs (the guest runtime's _initialize when an instance starts, and every
// exported call) and End as soon as it returned; calls on different instances may overlap, so End
// names the Begin it closes. Both sit on the path of every call and must stay cheap (a write).
type Watch interface {
	Begin(c WatchedCall) uint64
	End(id uint64)
}

// WatchedCall is one stretch of guest code under a deadline.
type WatchedCall struct {
	Plugin, Entry string
	// Object names the CR of a reconcile or delete as "namespace/name" ("name" when cluster
	// scoped), else "".
	Object   string
	Deadline time.Time
}

// watchBegin opens a watched call when there is a watcher; ok is false otherwise.
func (p *Plugin) watchBegin(ctx context.Context, entry string, obj *plugin.Object) (id uint64, ok bool) {
	if p.opts.Watch == nil {
		return 0, false
	}
	c := WatchedCall{Plugin: p.name, Entry: entry}
	if obj != nil {
		c.Object = obj.Name
		if obj.Namespace != "" {
			c.Object = obj.Namespace + "/" + obj.Name
		}
	}
	c.Deadline, _ = ctx.Deadline()
	return p.opts.Watch.Begin(c), true
}

func (p *Plugin) watchEnd(id uint64, ok bool) {
	if ok {
		p.opts.Watch.End(id)
	}
}

// Overrun is what an overrun marker records (modulecache.OverrunMarker: a watched module that
// overran a deadline keeps the termination checks on in later runs).
type Overrun = modulecache.OverrunMarker

// MarkOverrun records that the module at path overran a deadline, in the compilation cache
// directory opts name (as Load resolves it), and returns the marker's path.
func MarkOverrun(path string, opts Options, o Overrun) (string, error) {
	opts = opts.withDefaults()
	dir := opts.cacheDir()
	if opts.NoCache || dir == "" {
		return "", errors.New("no compilation cache directory to keep the marker in")
	}
	digest, _, err := admission.HashModule(path)
	if err != nil {
		return "", err
	}
	marker, err := modulecache.Dir(dir).MarkOverrun(digest, o)
	if err != nil {
		return "", fmt.Errorf("writing the overrun marker: %w", err)
	}
	return marker, nil
}

// terminationChecks decides whether the module is compiled with wazero's termination checks:
// on unless the operator trusts the plugin or a watcher stops it from outside, and on again for a
// watched module that overran before.
func (p *Plugin) terminationChecks(cache modulecache.Dir, digest modulecache.Digest) bool {
	switch {
	case p.opts.TrustedNoInterrupt:
		return false
	case p.opts.Watch == nil:
		return true
	}
	if cache == "" {
		return false
	}
	marker := cache.OverrunPath(digest)
	switch overran, err := cache.Overran(digest); {
	case overran && err == nil:
		p.log.Info("termination checks on for this module: it overran a call deadline before; delete the marker "+
			"or change the module to run it without them", "marker", marker)
		return true
	case !overran:
		return false
	default:
		// A marker that cannot be trusted still says the module may loop (modulecache.Overran).
		p.log.Warn("termination checks on for this module: its overrun marker cannot be read or checked", "marker", marker,
			"error", err.Error())
		return true
	}
}
