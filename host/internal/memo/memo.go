// Package memo is the convergence memo (docs/abi.md, "The convergence memo"): one plugin's
// records of the reconciles that verified a CR without writing, kept in the module cache between
// hook runs, and the rules for when a record may stand in for a full reconcile. The sandbox
// (host/internal/wasm) hands it each reconcile's input and the evidence the guest passes to its
// unchanged call; nothing here knows of wasm.
package memo

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/openstack-sync/openstack-sync/host/internal/modulecache"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

// Why (RATIONALE.md, "Why does the host remember converged CRs"): a converged CR costs a plugin a
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
// The records are bounded in bytes, per CR and in all (Config.MaxBytes), because they live in
// the pod's cache volume and are read whole every run: a result larger than maxResult is not
// recorded (that CR is reconciled in full every run), and past the total the oldest records go
// first.

// MaxAgeEnv sets the records' maximum age (Config.MaxAge): a Go duration, "0" turns the memo off.
const MaxAgeEnv = "OPENSTACK_SYNC_MEMO_MAX_AGE"

// MaxMiBEnv sets their bound in bytes (Config.MaxBytes) in MiB (the chart derives it from the CRs a
// release declares, memory.crs, within its cache volume).
const MaxMiBEnv = "OPENSTACK_SYNC_MEMO_MAX_MIB"

// DefaultMaxAge is how long a record may stand in for a full reconcile.
const DefaultMaxAge = 24 * time.Hour

// DefaultMaxBytes bounds one plugin's records when nothing sets it: ~11,000 CRs of router flavors
// (386 bytes a record measured) or ~12,700 of runbooks (328). A site with more sets a larger bound
// (the chart's follows memory.crs); one that outgrows it is warned at Save.
const DefaultMaxBytes = 4 << 20

// MemoryFactor bounds what the memo adds to a hook run's memory, in multiples of its bound in
// bytes: the file read whole, the records indexed, up to twice the bound recorded before the
// oldest go, and the collector's slack on all of it (TestTheMemoStaysWithinItsMemoryBound; the
// chart adds it to each hook's memory).
const MemoryFactor = 10

// keyFormat versions the key derivation: a host that derives keys differently must not match
// another's records (the file's own version is modulecache.Memo's).
const keyFormat = "openstack-sync memo v2"

// Bounds on one unchanged call: its evidence is hashed, never kept, but a guest must not make the
// host read its whole memory per CR, nor hold a record per piece.
const (
	MaxEvidence = 4 << 20
	MaxPieces   = 1 << 10
)

// maxResult is the largest result recorded: a CR's result is usually a few hundred bytes,
// and one of a megabyte (the most a guest may return) would make every record file megabytes.
const maxResult = 64 << 10

// maxUID bounds a record's name: a Kubernetes UID is 36 characters.
const maxUID = 1 << 10

// entryOverhead is what one record costs in the file besides its UID and result.
const entryOverhead = sha256.Size + 8 + 2*binary.MaxVarintLen32

type Key [sha256.Size]byte

type entry struct {
	// key is the sha256 of everything the verdict rested on (Store.key).
	key Key
	// at is when a full reconcile last verified the CR, in Unix seconds.
	at int64
	// result is the guest's result message of that reconcile, replayed on a hit.
	result []byte
}

func (e entry) size(uid string) int { return len(uid) + len(e.result) + entryOverhead }

// Config names one plugin's records and their bounds.
type Config struct {
	// Cache is the directory the records live in; Prefix the plugin's env prefix, which names
	// its file; Module the sha256 of the module the records belong to.
	Cache  modulecache.Dir
	Prefix string
	Module modulecache.Digest
	// MaxAge is the oldest record that may stand in for a full reconcile; MaxBytes bounds the
	// records in the file (DefaultMaxAge, DefaultMaxBytes when zero).
	MaxAge   time.Duration
	MaxBytes int
	// Settings is the digest of every variable the plugin can read (SettingsDigest): a changed
	// setting misses.
	Settings [sha256.Size]byte
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Log receives Save's warning when the bound made the store drop records (the plugin named
	// on it); nil logs nothing.
	Log *slog.Logger
}

// Store holds one plugin's records for one hook run: read at the first reconcile that asks,
// written back once (Save) when something changed.
type Store struct {
	cache    modulecache.Dir
	prefix   string
	module   modulecache.Digest
	maxAge   time.Duration
	maxBytes int
	now      func() time.Time
	settings [sha256.Size]byte
	log      *slog.Logger

	mu      sync.Mutex
	loaded  bool
	entries map[string]entry
	// size is what the entries take in the file (entry.size); it stays under 1.25 maxBytes
	// during a run (record compacts), and under maxBytes in the file (Save).
	size  int
	dirty bool
	hits  int
	// misses are the unchanged calls of this run that found no record to stand for them.
	misses int
	// evicted are the CRs whose fresh record the bound in bytes dropped during the run (compact);
	// Save reports those it could not keep.
	evicted map[string]struct{}
}

// New returns the store of c's plugin, or nil when the memo is off (a maximum age below zero)
// or there is no directory to keep it in.
func New(c Config) *Store {
	if c.Cache == "" || c.MaxAge < 0 || c.Prefix == "" {
		return nil
	}
	m := &Store{cache: c.Cache, prefix: c.Prefix, module: c.Module, maxAge: cmp.Or(c.MaxAge, DefaultMaxAge),
		maxBytes: cmp.Or(c.MaxBytes, DefaultMaxBytes), now: c.Now, settings: c.Settings, log: c.Log}
	if m.now == nil {
		m.now = time.Now
	}
	return m
}

// Path is the file of the records, for messages.
func (m *Store) Path() string { return m.cache.Path(modulecache.Memo, m.prefix) }

// SettingsDigest hashes every <PREFIX>_* variable the plugin's config_get can see: a verdict may
// depend on them, so a changed setting misses.
func SettingsDigest(prefix string, environ func() []string, lookup func(string) (string, bool)) [sha256.Size]byte {
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

// Call is one reconcile's use of the memo (Store.Begin); a nil *Call is a reconcile without
// one, which never hits and records nothing.
type Call struct {
	store *Store
	// uid names the record: a CR deleted and created again under the same name is another CR.
	uid   string
	input []byte
	// asked is set once the reconcile called unchanged; key is what its last call computed.
	asked bool
	key   Key
	hit   *entry
	// wrote is set by any request that may change OpenStack: a reconcile that wrote has no
	// steady state to record yet.
	wrote bool
}

// Begin starts the memo's part in the reconcile of the CR uid, whose input the host sends as
// input; nil for a nil store.
func (m *Store) Begin(uid string, input []byte) *Call {
	if m == nil {
		return nil
	}
	return &Call{store: m, uid: uid, input: input}
}

// key derives the key of one unchanged call: the format, the module, the plugin's configuration,
// the entry point, the reconcile input exactly as sent and each of the n pieces of evidence,
// every part length-prefixed so no two different sequences hash alike. The pieces are read one
// at a time and never copied.
func (m *Store) key(entry string, input []byte, n int, piece func(i int) []byte) Key {
	h := sha256.New()
	writeField(h, []byte(keyFormat))
	writeField(h, m.module[:])
	writeField(h, m.settings[:])
	writeField(h, []byte(entry))
	writeField(h, input)
	var c [8]byte
	binary.BigEndian.PutUint64(c[:], uint64(n))
	h.Write(c[:])
	for i := range n {
		writeField(h, piece(i))
	}
	var k Key
	h.Sum(k[:0])
	return k
}

// fresh reports whether a record made at may still stand in for a full reconcile: no older than
// the maximum age, and not dated after now (a clock set back, or a record not made here).
func (m *Store) fresh(at int64, now time.Time) bool {
	made := time.Unix(at, 0)
	return !made.After(now) && now.Sub(made) <= m.maxAge
}

// check answers one unchanged call: the record of uid when it was made with key and is fresh,
// else nil.
func (m *Store) check(uid string, key Key) *entry {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.load()
	e, ok := m.entries[uid]
	if !ok || e.key != key || !m.fresh(e.at, m.now()) {
		m.misses++
		return nil
	}
	m.hits++
	return &e
}

// Misses is how many unchanged calls of this run found no record to stand for them; 0 for a nil
// store. A run with misses read what a later run, answered from the records it made, will not.
func (m *Store) Misses() int {
	if m == nil {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.misses
}

// record keeps the result of a full reconcile that verified the CR without writing; a result
// past maxResult is not kept, and the CR's older record goes.
func (m *Store) record(uid string, key Key, result []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.load()
	if len(result) > maxResult || len(uid) > maxUID {
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
	e := entry{key: key, at: m.now().Unix(), result: result}
	m.entries[uid] = e
	m.size += e.size(uid)
	m.dirty = true
	if m.size > m.maxBytes+m.maxBytes/4 {
		// A run recording more than the file can keep holds at most a quarter more than the bound.
		m.compact(m.now())
	}
}

// forget drops the record of a CR whose last reconcile could not stand for its steady state.
func (m *Store) forget(uid string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.load()
	m.forgetLocked(uid)
}

func (m *Store) forgetLocked(uid string) {
	if e, ok := m.entries[uid]; ok {
		m.size -= e.size(uid)
		delete(m.entries, uid)
		m.dirty = true
	}
}

// compact drops the records past the maximum age or dated after now, then the oldest ones until
// the rest fit maxBytes, and returns the UIDs kept, newest first.
func (m *Store) compact(now time.Time) []string {
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
		uid := uids[len(uids)-1]
		m.forgetLocked(uid)
		if m.evicted == nil {
			m.evicted = map[string]struct{}{}
		}
		m.evicted[uid] = struct{}{}
		uids = uids[:len(uids)-1]
	}
	return uids
}

// Evicted is how many CRs lost a fresh record to the bound in bytes since the store was made and
// have none now: the CRs the next run reconciles in full although nothing changed.
func (m *Store) Evicted() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.evictedLocked()
}

func (m *Store) evictedLocked() int {
	n := 0
	for uid := range m.evicted {
		if _, kept := m.entries[uid]; !kept {
			n++
		}
	}
	return n
}

// load reads the records once; a missing, unreadable, damaged or foreign file (another module,
// another format, larger than the bound) is an empty memo, never an error: it is a cache.
func (m *Store) load() {
	if m.loaded {
		return
	}
	m.loaded = true
	m.entries = map[string]entry{}
	kind := modulecache.Memo
	kind.Max = int64(m.maxBytes)
	b, err := m.cache.Read(kind, m.prefix, m.module)
	if err != nil {
		// Another module's records (an upgrade), a damaged or oversized file: none can match, and
		// the file is replaced at Close.
		m.dirty = !modulecache.IsMissing(err)
		return
	}
	if !decode(b, func(uid string, e entry) {
		m.entries[uid] = e
		m.size += e.size(uid)
	}) {
		m.entries, m.size, m.dirty = map[string]entry{}, 0, true
	}
}

// Save writes the records back when the run changed them: without those past the maximum age or
// dated after now (CRs deleted since, or not reconciled in that long), and within the bound in
// bytes, the oldest records dropped first.
func (m *Store) Save() error {
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
		return encode(w, uids, m.entries)
	})
	if err != nil {
		return err
	}
	m.dirty = false
	if n := m.evictedLocked(); n > 0 && m.log != nil {
		// Once per run: a site that outgrew the bound (more CRs than memory.crs declares) reconciles
		// these CRs in full every run, for CPU and OpenStack reads a larger bound would save.
		m.log.Warn("The convergence memo is full; the CRs whose records it dropped are reconciled in full every run: "+
			"raise memory.crs to this plugin's CR count, or compilationCache.memoMaxMiB (OPENSTACK_SYNC_MEMO_MAX_MIB)",
			"dropped", n, "kept", len(uids), "boundMiB", fmt.Sprintf("%.1f", float64(m.maxBytes)/(1<<20)), "file", m.Path())
	}
	return nil
}

// encode writes the records in uids' order: a count, then per record its UID, key, time and
// result, lengths as uvarints.
func encode(w io.Writer, uids []string, entries map[string]entry) error {
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

// decode reads encode's records into add, the results aliasing b, and reports whether
// they all decoded.
func decode(b []byte, add func(uid string, e entry)) bool {
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
		uid := bytesOf(maxUID)
		if uid == nil || r.Len() < sha256.Size+8 {
			return false
		}
		var e entry
		r.Read(e.key[:])
		var at [8]byte
		r.Read(at[:])
		e.at = int64(binary.BigEndian.Uint64(at[:]))
		if e.result = bytesOf(maxResult); e.result == nil {
			return false
		}
		add(string(uid), e)
	}
	return r.Len() == 0
}

// Unchanged answers the guest's unchanged call in the reconcile of entry: the n pieces of
// evidence are what the plugin's verdict rests on, read through piece (from the guest's memory,
// never copied). More than MaxPieces pieces, or MaxEvidence bytes, is an error, found before any
// piece is hashed. Outside a reconcile (a nil c) it is never a hit.
func (c *Call) Unchanged(entry string, n int, piece func(i int) []byte) (bool, error) {
	if c == nil {
		return false, nil
	}
	if n > MaxPieces {
		return false, fmt.Errorf("%d pieces of evidence exceed the limit of %d", n, MaxPieces)
	}
	total := 0
	for i := range n {
		if total += len(piece(i)); total > MaxEvidence {
			return false, fmt.Errorf("more than %d bytes of evidence exceed the limit of %d bytes", total, MaxEvidence)
		}
	}
	c.asked = true
	c.key = c.store.key(entry, c.input, n, piece)
	c.hit = c.store.check(c.uid, c.key)
	return c.hit != nil, nil
}

// Request notes a request the reconcile made: one with a method that may change OpenStack means
// there is no steady state to record.
func (c *Call) Request(method string) {
	if c != nil && method != "GET" && method != "HEAD" {
		c.wrote = true
	}
}

// Replay returns the recorded result a guest asked for by answering unchanged; asking without a
// hit in the same call is a protocol error, as the host has nothing it could report.
func (c *Call) Replay() ([]byte, error) {
	if c == nil || c.hit == nil {
		return nil, errors.New(`"unchanged": true without an unchanged call that matched a record in the same reconcile`)
	}
	return c.hit.result, nil
}

// Settle records or forgets the CR once its reconcile is over. Only a successful reconcile that
// asked, wrote nothing and reached a final outcome stands for the steady state; a hit keeps its
// record as it is, so its age still counts from the last full reconcile.
func (c *Call) Settle(ok bool, out []byte, lc *plugin.Lifecycle) {
	switch {
	case c == nil:
	case ok && c.hit != nil && !c.wrote:
	case ok && c.asked && !c.wrote && (lc == nil || lc.Reason == plugin.ReasonSuccess):
		c.store.record(c.uid, c.key, out)
	default:
		c.store.forget(c.uid)
	}
}

// uvarintLen is the length of v as encode writes it.
func uvarintLen(v uint64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutUvarint(b[:], v)
}
