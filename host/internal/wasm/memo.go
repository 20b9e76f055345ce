package wasm

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/openstack-sync/openstack-sync/host/internal/modulecache"
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
// change, and a record dated after now. The records are a cache: losing them costs one full pass.
//
// The records are bounded in bytes, per CR and in all (Options.MemoMaxBytes), because they live in
// the pod's cache volume and are read whole every run: a result larger than maxMemoResult is not
// recorded (that CR is reconciled in full every run), and past the total the oldest records go
// first.

// MemoMaxAgeEnv sets Options.MemoMaxAge: a Go duration, "0" turns the memo off.
const MemoMaxAgeEnv = "OPENSTACK_SYNC_MEMO_MAX_AGE"

// MemoMaxMiBEnv sets Options.MemoMaxBytes in MiB (the chart derives it from its cache volume).
const MemoMaxMiBEnv = "OPENSTACK_SYNC_MEMO_MAX_MIB"

// DefaultMemoMaxAge is how long a record may stand in for a full reconcile.
const DefaultMemoMaxAge = 24 * time.Hour

// DefaultMemoMaxBytes bounds one plugin's records: ~25,000 CRs of usual results (a few hundred
// bytes each).
const DefaultMemoMaxBytes = 4 << 20

// MemoMemoryFactor bounds what the memo adds to a hook run's memory, in multiples of its bound in
// bytes: the file read whole, the records indexed, up to twice the bound recorded before the
// oldest go, and the collector's slack on all of it (TestTheMemoStaysWithinItsMemoryBound; the
// chart adds it to each hook's memory).
const MemoMemoryFactor = 10

// memoFormat versions the key derivation: a host that derives keys differently must not match
// another's records (the file's own version is modulecache.Memo's).
const memoFormat = "openstack-sync memo v2"

// Bounds on one unchanged call: its evidence is hashed, never kept, but a guest must not make the
// host read its whole memory per CR, nor hold a record per piece.
const (
	maxMemoEvidence = 4 << 20
	maxMemoPieces   = 1 << 10
)

// maxMemoResult is the largest result recorded: a CR's result is usually a few hundred bytes,
// and one of a megabyte (the most a guest may return) would make every record file megabytes.
const maxMemoResult = 64 << 10

// maxMemoUID bounds a record's name: a Kubernetes UID is 36 characters.
const maxMemoUID = 1 << 10

// memoEntryOverhead is what one record costs in the file besides its UID and result.
const memoEntryOverhead = sha256.Size + 8 + 2*binary.MaxVarintLen32

type memoKey [sha256.Size]byte

type memoEntry struct {
	// key is the sha256 of everything the verdict rested on (memoStore.key).
	key memoKey
	// at is when a full reconcile last verified the CR, in Unix seconds.
	at int64
	// result is the guest's result message of that reconcile, replayed on a hit.
	result []byte
}

func (e memoEntry) size(uid string) int { return len(uid) + len(e.result) + memoEntryOverhead }

// memoStore holds one plugin's records for one hook run: read at the first reconcile that asks,
// written back once at Close when something changed.
type memoStore struct {
	cache    modulecache.Dir
	prefix   string
	module   modulecache.Digest
	maxAge   time.Duration
	maxBytes int
	now      func() time.Time
	// config is the digest of every variable the plugin can read through config_get.
	config [sha256.Size]byte
	log    interface{ Warn(string, ...any) }

	mu      sync.Mutex
	loaded  bool
	entries map[string]memoEntry
	// size is what the entries take in the file (memoEntry.size); it stays under 1.25 maxBytes
	// during a run (record compacts), and under maxBytes in the file (save).
	size  int
	dirty bool
	hits  int
}

// path is the file of the records, for messages.
func (m *memoStore) path() string { return m.cache.Path(modulecache.Memo, m.prefix) }

// newMemo returns the store of a plugin whose env prefix is known, or nil when the memo is off
// or there is no cache directory to keep it in.
func (p *Plugin) newMemo(cache modulecache.Dir) *memoStore {
	if p.opts.MemoDir != "" {
		cache = modulecache.Dir(p.opts.MemoDir)
	}
	if !p.opts.Memo || cache == "" || p.opts.MemoMaxAge <= 0 || p.prefix == "" {
		return nil
	}
	return &memoStore{cache: cache, prefix: p.prefix, module: p.digest, maxAge: p.opts.MemoMaxAge,
		maxBytes: p.opts.MemoMaxBytes, now: time.Now, log: p.log,
		config: configDigest(p.prefix, p.opts.Environ, p.opts.LookupEnv)}
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

func writeField(w hash.Hash, b []byte) {
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
	// asked is set once the reconcile called unchanged; key is what its last call computed.
	asked bool
	key   memoKey
	hit   *memoEntry
	// wrote is set by any request that may change OpenStack: a reconcile that wrote has no
	// steady state to record yet.
	wrote bool
}

// key derives the key of one unchanged call: the format, the module, the plugin's configuration,
// the entry point, the reconcile input exactly as sent and each of the n pieces of evidence,
// every part length-prefixed so no two different sequences hash alike. The pieces are read one
// at a time and never copied.
func (m *memoStore) key(entry string, input []byte, n int, piece func(i int) []byte) memoKey {
	h := sha256.New()
	writeField(h, []byte(memoFormat))
	writeField(h, m.module[:])
	writeField(h, m.config[:])
	writeField(h, []byte(entry))
	writeField(h, input)
	var c [8]byte
	binary.BigEndian.PutUint64(c[:], uint64(n))
	h.Write(c[:])
	for i := range n {
		writeField(h, piece(i))
	}
	var k memoKey
	h.Sum(k[:0])
	return k
}

// fresh reports whether a record made at may still stand in for a full reconcile: no older than
// the maximum age, and not dated after now (a clock set back, or a record not made here).
func (m *memoStore) fresh(at int64, now time.Time) bool {
	made := time.Unix(at, 0)
	return !made.After(now) && now.Sub(made) <= m.maxAge
}

// check answers one unchanged call: the record of uid when it was made with key and is fresh,
// else nil.
func (m *memoStore) check(uid string, key memoKey) *memoEntry {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.load()
	e, ok := m.entries[uid]
	if !ok || e.key != key || !m.fresh(e.at, m.now()) {
		return nil
	}
	m.hits++
	return &e
}

// record keeps the result of a full reconcile that verified the CR without writing; a result
// past maxMemoResult is not kept, and the CR's older record goes.
func (m *memoStore) record(uid string, key memoKey, result []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.load()
	if len(result) > maxMemoResult || len(uid) > maxMemoUID {
		m.forgetLocked(uid)
		return
	}
	old, had := m.entries[uid]
	if had {
		m.size -= old.size(uid)
	}
	// A converged CR reports the same result run after run: the record read from the file is
	// kept rather than copied again.
	if !had || !bytes.Equal(old.result, result) {
		result = slices.Clone(result)
	} else {
		result = old.result
	}
	e := memoEntry{key: key, at: m.now().Unix(), result: result}
	m.entries[uid] = e
	m.size += e.size(uid)
	m.dirty = true
	if m.size > m.maxBytes+m.maxBytes/4 {
		// A run recording more than the file can keep holds at most a quarter more than the bound.
		m.compact(m.now())
	}
}

// forget drops the record of a CR whose last reconcile could not stand for its steady state.
func (m *memoStore) forget(uid string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.load()
	m.forgetLocked(uid)
}

func (m *memoStore) forgetLocked(uid string) {
	if e, ok := m.entries[uid]; ok {
		m.size -= e.size(uid)
		delete(m.entries, uid)
		m.dirty = true
	}
}

// compact drops the records past the maximum age or dated after now, then the oldest ones until
// the rest fit maxBytes, and returns the UIDs kept, newest first.
func (m *memoStore) compact(now time.Time) []string {
	uids := make([]string, 0, len(m.entries))
	for uid, e := range m.entries {
		if !m.fresh(e.at, now) {
			m.forgetLocked(uid)
			continue
		}
		uids = append(uids, uid)
	}
	slices.SortFunc(uids, func(a, b string) int {
		return cmp.Or(cmp.Compare(m.entries[b].at, m.entries[a].at), strings.Compare(a, b))
	})
	for m.size > m.maxBytes-binary.MaxVarintLen64 && len(uids) > 0 {
		m.forgetLocked(uids[len(uids)-1])
		uids = uids[:len(uids)-1]
	}
	return uids
}

// load reads the records once; a missing, unreadable, damaged or foreign file (another module,
// another format, larger than the bound) is an empty memo, never an error: it is a cache.
func (m *memoStore) load() {
	if m.loaded {
		return
	}
	m.loaded = true
	m.entries = map[string]memoEntry{}
	kind := modulecache.Memo
	kind.Max = int64(m.maxBytes)
	b, err := m.cache.Read(kind, m.prefix, m.module)
	if err != nil {
		// Another module's records (an upgrade), a damaged or oversized file: none can match, and
		// the file is replaced at Close.
		m.dirty = !modulecache.IsMissing(err)
		return
	}
	if !decodeMemo(b, func(uid string, e memoEntry) {
		m.entries[uid] = e
		m.size += e.size(uid)
	}) {
		m.entries, m.size, m.dirty = map[string]memoEntry{}, 0, true
	}
}

// save writes the records back when the run changed them: without those past the maximum age or
// dated after now (CRs deleted since, or not reconciled in that long), and within the bound in
// bytes, the oldest records dropped first.
func (m *memoStore) save() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.loaded || !m.dirty {
		return nil
	}
	uids := m.compact(m.now())
	size := uvarintLen(uint64(len(uids)))
	for _, uid := range uids {
		e := m.entries[uid]
		size += uvarintLen(uint64(len(uid))) + len(uid) + sha256.Size + 8 + uvarintLen(uint64(len(e.result))) + len(e.result)
	}
	err := m.cache.WriteFunc(modulecache.Memo, m.prefix, m.module, size, func(w io.Writer) error {
		return encodeMemo(w, uids, m.entries)
	})
	if err != nil {
		return err
	}
	m.dirty = false
	return nil
}

// encodeMemo writes the records in uids' order: a count, then per record its UID, key, time and
// result, lengths as uvarints.
func encodeMemo(w io.Writer, uids []string, entries map[string]memoEntry) error {
	var buf []byte
	put := func(b []byte) error {
		_, err := w.Write(b)
		return err
	}
	if err := put(binary.AppendUvarint(buf[:0], uint64(len(uids)))); err != nil {
		return err
	}
	for _, uid := range uids {
		e := entries[uid]
		buf = binary.AppendUvarint(buf[:0], uint64(len(uid)))
		buf = append(buf, uid...)
		buf = append(buf, e.key[:]...)
		buf = binary.BigEndian.AppendUint64(buf, uint64(e.at))
		buf = binary.AppendUvarint(buf, uint64(len(e.result)))
		if err := put(buf); err != nil {
			return err
		}
		if err := put(e.result); err != nil {
			return err
		}
	}
	return nil
}

// decodeMemo reads encodeMemo's records into add, the results aliasing b, and reports whether
// they all decoded.
func decodeMemo(b []byte, add func(uid string, e memoEntry)) bool {
	r := bytes.NewReader(b)
	n, err := binary.ReadUvarint(r)
	if err != nil || n > uint64(len(b)) {
		return false
	}
	bytesOf := func(limit uint64) []byte {
		l, err := binary.ReadUvarint(r)
		if err != nil || l > limit || l > uint64(r.Len()) {
			return nil
		}
		at := len(b) - r.Len()
		r.Seek(int64(l), io.SeekCurrent)
		return b[at : at+int(l) : at+int(l)]
	}
	for range n {
		uid := bytesOf(maxMemoUID)
		if uid == nil || r.Len() < sha256.Size+8 {
			return false
		}
		var e memoEntry
		r.Read(e.key[:])
		var at [8]byte
		r.Read(at[:])
		e.at = int64(binary.BigEndian.Uint64(at[:]))
		if e.result = bytesOf(maxMemoResult); e.result == nil {
			return false
		}
		add(string(uid), e)
	}
	return r.Len() == 0
}

// unchanged serves the guest's unchanged call during ci: the n pieces of evidence are what the
// plugin's verdict rests on, read through piece (from the guest's memory, never copied). Outside
// a reconcile, or with the memo off, it is never a hit.
func (ci *callInfo) unchanged(n int, piece func(i int) []byte) (bool, error) {
	mc := ci.memo
	if mc == nil {
		return false, nil
	}
	if n > maxMemoPieces {
		return false, fmt.Errorf("%d pieces of evidence exceed the limit of %d", n, maxMemoPieces)
	}
	total := 0
	for i := range n {
		if total += len(piece(i)); total > maxMemoEvidence {
			return false, fmt.Errorf("more than %d bytes of evidence exceed the limit of %d bytes", total, maxMemoEvidence)
		}
	}
	mc.asked = true
	mc.key = mc.store.key(ci.entry, mc.input, n, piece)
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
	return mc.hit.result, nil
}

// settle records or forgets the CR once its reconcile is over. Only a successful reconcile that
// asked, wrote nothing and reached a final outcome stands for the steady state; a hit keeps its
// record as it is, so its age still counts from the last full reconcile.
func (mc *memoCall) settle(ok bool, out []byte, lc *plugin.Lifecycle) {
	switch {
	case mc == nil:
	case ok && mc.hit != nil && !mc.wrote:
	case ok && mc.asked && !mc.wrote && (lc == nil || lc.Reason == plugin.ReasonSuccess):
		mc.store.record(mc.uid, mc.key, out)
	default:
		mc.store.forget(mc.uid)
	}
}
