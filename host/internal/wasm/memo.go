package wasm

import (
	"github.com/openstack-sync/openstack-sync/host/internal/memo"
	"github.com/openstack-sync/openstack-sync/host/internal/modulecache"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

// The plugin's side of the convergence memo (package memo, docs/abi.md "The convergence memo"):
// its store of records, and each reconcile's use of it.

// memoStore is the plugin's store of records; nil when the memo is off.
type memoStore struct{ *memo.Store }

func (m *memoStore) save() error  { return m.Save() }
func (m *memoStore) path() string { return m.Path() }

// newMemo returns the store of a plugin whose env prefix is known, or nil when the memo is off
// or there is no cache directory to keep it in.
func (p *Plugin) newMemo(cache modulecache.Dir) *memoStore {
	if p.opts.MemoDir != "" {
		cache = modulecache.Dir(p.opts.MemoDir)
	}
	if !p.opts.Memo || p.opts.MemoMaxAge <= 0 {
		return nil
	}
	s := memo.New(memo.Config{Cache: cache, Prefix: p.prefix, Module: p.digest, MaxAge: p.opts.MemoMaxAge,
		MaxBytes: p.opts.MemoMaxBytes, Now: p.opts.Now, Settings: memo.SettingsDigest(p.prefix, p.opts.Environ, p.opts.LookupEnv),
		Log: p.log})
	if s == nil {
		return nil
	}
	return &memoStore{s}
}

// MemoMisses implements plugin.MemoReporter: the run's unchanged calls that found no record, also
// once the plugin is closed (its store is written and dropped at Close).
func (p *Plugin) MemoMisses() int {
	if p.memo != nil {
		return p.memo.Misses()
	}
	return p.memoMissed
}

var _ plugin.MemoReporter = (*Plugin)(nil)

// memoCall is one reconcile's use of the memo, begun at its first use.
type memoCall struct {
	store *memoStore
	uid   string
	input []byte
	call  *memo.Call
}

// c is the memo's call; nil outside a reconcile or with the memo off.
func (mc *memoCall) c() *memo.Call {
	if mc == nil {
		return nil
	}
	if mc.call == nil {
		mc.call = mc.store.Begin(mc.uid, mc.input)
	}
	return mc.call
}

func (mc *memoCall) replay() ([]byte, error)                          { return mc.c().Replay() }
func (mc *memoCall) settle(ok bool, out []byte, lc *plugin.Lifecycle) { mc.c().Settle(ok, out, lc) }

// unchanged serves the guest's unchanged call during ci (memo.Call.Unchanged).
func (ci *callInfo) unchanged(n int, piece func(i int) []byte) (bool, error) {
	return ci.memo.c().Unchanged(ci.entry, n, piece)
}
