package wasm

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

// The convergence memo (docs/abi.md, "The convergence memo"). A converged CR costs a plugin a
// decode of its spec, of the OpenStack state it compares with and the comparison, every run,
// although in steady state neither side changes; in the sandbox that was most of a hook run's
// CPU (docs/benchmarks.md). A plugin that opts in hands the host, before that work, the evidence
// its verdict rests on (the OpenStack state as it read it); the host answers whether this exact
// input and evidence were last seen by a call that succeeded without writing anything, and if so
// the plugin returns at once and the host reports the result it recorded then. Anything that
// differs (spec, status, generation, the module, the plugin's configuration, one byte of the
// evidence) misses, and the plugin does the whole reconcile as before; so does a record older
// than the memo's maximum age, which bounds how long a plugin's incomplete evidence could hide a
// change. The records are a cache: losing them costs one full pass.

// MemoMaxAgeEnv sets Options.MemoMaxAge: a Go duration, "0" turns the memo off.
const MemoMaxAgeEnv = "OPENSTACK_SYNC_MEMO_MAX_AGE"

// DefaultMemoMaxAge is how long a record may stand in for a full reconcile.
const DefaultMemoMaxAge = 24 * time.Hour

// memoFormat versions both the record file and the key derivation: a host that derives keys
// differently must not match another's records.
const memoFormat = "openstack-sync memo v1"

// maxMemoEvidence bounds the evidence of one unchanged call: it is hashed, not kept, but a guest
// must not make the host read its whole memory per CR.
const maxMemoEvidence = 4 << 20

type memoEntry struct {
	// Key is the hex sha256 of everything the verdict rested on (memoKey).
	Key string `json:"key"`
	// At is when a full reconcile last verified the CR, in Unix seconds.
	At int64 `json:"at"`
	// Result is the guest's result message of that reconcile, replayed on a hit.
	Result json.RawMessage `json:"result"`
}

type memoFile struct {
	Format  string               `json:"format"`
	Module  string               `json:"module"`
	Entries map[string]memoEntry `json:"entries"`
}

// memoStore holds one plugin's records for one hook run: read at the first reconcile that asks,
// written back once at Close when something changed.
type memoStore struct {
	path   string
	module string
	maxAge time.Duration
	now    func() time.Time
	// config is the digest of every variable the plugin can read through config_get.
	config [sha256.Size]byte

	mu      sync.Mutex
	loaded  bool
	entries map[string]memoEntry
	dirty   bool
	hits    int
}

// newMemo returns the store of a plugin whose env prefix is known, or nil when the memo is off
// or there is no cache directory to keep it in.
func (p *Plugin) newMemo(cacheDir string) *memoStore {
	dir := p.opts.MemoDir
	if dir == "" && cacheDir != "" {
		dir = filepath.Join(cacheDir, "memo")
	}
	if !p.opts.Memo || dir == "" || p.opts.MemoMaxAge <= 0 || p.prefix == "" {
		return nil
	}
	return &memoStore{path: filepath.Join(dir, p.prefix+".json"), module: p.sha256,
		maxAge: p.opts.MemoMaxAge, now: time.Now, config: configDigest(p.prefix, p.opts.Environ, p.opts.LookupEnv)}
}

// configDigest hashes every <PREFIX>_* variable the plugin's config_get can see: a verdict may
// depend on them, so a changed setting misses.
func configDigest(prefix string, environ func() []string, lookup func(string) (string, bool)) [sha256.Size]byte {
	h := sha256.New()
	var names []string
	for _, kv := range environ() {
		if name, _, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(name, prefix+"_") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		if v, ok := lookup(name); ok {
			writeField(h, []byte(name))
			writeField(h, []byte(v))
		}
	}
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

func writeField(w interface{ Write([]byte) (int, error) }, b []byte) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(b)))
	w.Write(n[:])
	w.Write(b)
}

// memoCall is one reconcile's use of the memo.
type memoCall struct {
	store *memoStore
	// uid names the record: a CR deleted and created again under the same name is another CR.
	uid   string
	input []byte
	// key is what the last unchanged call of the reconcile computed; "" when it never asked.
	key string
	hit *memoEntry
	// wrote is set by any request that may change OpenStack: a reconcile that wrote has no
	// steady state to record yet.
	wrote bool
}

// memoKey derives the key of one unchanged call: the format, the module, the plugin's
// configuration, the entry point, the reconcile input exactly as sent and each piece of evidence,
// every part length-prefixed so no two different sequences hash alike.
func (m *memoStore) key(entry string, input []byte, evidence [][]byte) string {
	h := sha256.New()
	writeField(h, []byte(memoFormat))
	writeField(h, []byte(m.module))
	writeField(h, m.config[:])
	writeField(h, []byte(entry))
	writeField(h, input)
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(evidence)))
	h.Write(n[:])
	for _, e := range evidence {
		writeField(h, e)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// check answers one unchanged call: the record of uid when it was made with key and is young
// enough, else nil.
func (m *memoStore) check(uid, key string) *memoEntry {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.load()
	e, ok := m.entries[uid]
	if !ok || e.Key != key || m.now().Sub(time.Unix(e.At, 0)) > m.maxAge {
		return nil
	}
	m.hits++
	return &e
}

// record keeps the result of a full reconcile that verified the CR without writing.
func (m *memoStore) record(uid, key string, result []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.load()
	m.entries[uid] = memoEntry{Key: key, At: m.now().Unix(), Result: slices.Clone(result)}
	m.dirty = true
}

// forget drops the record of a CR whose last reconcile could not stand for its steady state.
func (m *memoStore) forget(uid string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.load()
	if _, ok := m.entries[uid]; ok {
		delete(m.entries, uid)
		m.dirty = true
	}
}

// load reads the records once; a missing, unreadable or foreign file is an empty memo (logged by
// save when it cannot be replaced), never an error: it is a cache.
func (m *memoStore) load() {
	if m.loaded {
		return
	}
	m.loaded = true
	m.entries = map[string]memoEntry{}
	b, err := os.ReadFile(m.path)
	if err != nil {
		return
	}
	var f memoFile
	if json.Unmarshal(b, &f) != nil || f.Format != memoFormat || f.Module != m.module || f.Entries == nil {
		// Another module's records (an upgrade) or another format: none of them can match.
		m.dirty = true
		return
	}
	m.entries = f.Entries
}

// save writes the records back when the run changed them, dropping those past the maximum age
// (CRs deleted since, or not reconciled in that long). It writes a temporary file and renames it,
// so a concurrent reader sees the old records or the new ones, never half of either.
func (m *memoStore) save() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.loaded || !m.dirty {
		return nil
	}
	now := m.now()
	for uid, e := range m.entries {
		if now.Sub(time.Unix(e.At, 0)) > m.maxAge {
			delete(m.entries, uid)
		}
	}
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(memoFile{Format: memoFormat, Module: m.module, Entries: m.entries}); err != nil {
		return err
	}
	if err := writeCacheFile(m.path, filepath.Base(m.path)+".*", buf.Bytes()); err != nil {
		return err
	}
	m.dirty = false
	return nil
}

// unchanged serves the guest's unchanged call during ci: evidence is what the plugin's verdict
// rests on. Outside a reconcile, or with the memo off, it is never a hit.
func (ci *callInfo) unchanged(evidence [][]byte) (bool, error) {
	mc := ci.memo
	if mc == nil {
		return false, nil
	}
	total := 0
	for _, e := range evidence {
		total += len(e)
	}
	if total > maxMemoEvidence {
		return false, fmt.Errorf("%d bytes of evidence exceed the limit of %d bytes", total, maxMemoEvidence)
	}
	mc.key = mc.store.key(ci.entry, mc.input, evidence)
	mc.hit = mc.store.check(mc.uid, mc.key)
	return mc.hit != nil, nil
}

// memoWrites names the methods that may change OpenStack: any of them during a reconcile means
// there is no steady state to record.
func memoWrites(method string) bool { return method != "GET" && method != "HEAD" }

// replay returns the recorded result a guest asked for by answering unchanged; asking without a
// hit in the same call is a protocol error, as the host has nothing it could report.
func (mc *memoCall) replay() ([]byte, error) {
	if mc == nil || mc.hit == nil {
		return nil, errors.New(`"unchanged": true without an unchanged call that matched a record in the same reconcile`)
	}
	return mc.hit.Result, nil
}

// settle records or forgets the CR once its reconcile is over. Only a successful reconcile that
// asked, wrote nothing and reached a final outcome stands for the steady state; a hit keeps its
// record as it is, so its age still counts from the last full reconcile.
func (mc *memoCall) settle(ok bool, out []byte, lc *plugin.Lifecycle) {
	switch {
	case mc == nil:
	case ok && mc.hit != nil && !mc.wrote:
	case ok && mc.key != "" && !mc.wrote && (lc == nil || lc.Reason == plugin.ReasonSuccess):
		mc.store.record(mc.uid, mc.key, out)
	default:
		mc.store.forget(mc.uid)
	}
}
