// Package replay is the run replay (docs/abi.md, "The run replay"; docs/contract.md Decision 22):
// the convergence memo lifted from one CR to a whole hook run. A run of a deterministic plugin
// that wrote nothing is recorded (what it depended on, the reads each credential group's session
// sent and a digest of each answer); the next run, when its CRs and settings are the same, sends
// those reads itself, and when every answer is byte for byte the same it is the recorded run
// again: the host reports it without loading the module or calling the guest. Anything that
// differs falls back to the full run.
//
// Why (RATIONALE.md, "Why does the host replay a converged run"): in a converged run the guest
// still decodes every CR and finds its evidence, most of a run's CPU at thousands of CRs, and a
// small run pays the module's compile; none of that can change the outcome when the inputs and
// every answer are what they were.
//
// The package sees plugins and sessions only through host/internal/plugin, and keeps its record
// in the module cache (modulecache.ReplayRecord).
package replay

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/openstack-sync/openstack-sync/host/internal/memo"
	"github.com/openstack-sync/openstack-sync/host/internal/modulecache"
	"github.com/openstack-sync/openstack-sync/host/internal/planner"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/resource"
)

// Env turns the replay off with "off" (default "on"); the memo's OPENSTACK_SYNC_MEMO_MAX_AGE=0
// turns it off too, and its maximum age is the oldest record a run may be replayed from.
const Env = "OPENSTACK_SYNC_REPLAY"

// keyFormat versions what the key and the CR digest cover: a host that derives them differently
// must not match another's records.
const keyFormat = "openstack-sync replay v1"

// MaxMiBEnv bounds the record, in MiB (1 to modulecache.MaxReplayBytes' 32): the chart sets it to
// the room it keeps for the record in the cache volume, so a site with more CRs than memory.crs
// declares cannot fill the volume and have the pod evicted; a run past it is not recorded.
const MaxMiBEnv = "OPENSTACK_SYNC_REPLAY_MAX_MIB"

// Config is the operator's switches.
type Config struct {
	// MaxAge is the oldest record that may stand for a run; 0 when the replay is off.
	MaxAge time.Duration
	// MaxBytes is the largest record this run may write.
	MaxBytes int
}

// Settings reads the operator's switches.
func Settings(lookup func(string) (string, bool)) (Config, error) {
	c := Config{MaxBytes: modulecache.MaxReplayBytes}
	if v, ok := lookup(MaxMiBEnv); ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 || n > modulecache.MaxReplayBytes>>20 {
			return Config{}, fmt.Errorf("%s must be a whole number of MiB from 1 to %d, got %q", MaxMiBEnv, modulecache.MaxReplayBytes>>20, v)
		}
		c.MaxBytes = n << 20
	}
	if v, ok := lookup(Env); ok {
		switch strings.TrimSpace(v) {
		case "on", "":
		case "off":
			return c, nil
		default:
			return Config{}, fmt.Errorf("%s must be on or off, got %q", Env, v)
		}
	}
	v, ok := lookup(memo.MaxAgeEnv)
	if !ok {
		c.MaxAge = memo.DefaultMaxAge
		return c, nil
	}
	if t := strings.TrimSpace(v); t == "0" {
		return c, nil
	}
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil || d <= 0 {
		return Config{}, fmt.Errorf("%s must be a positive duration such as 24h, or 0 to turn the memo off, got %q", memo.MaxAgeEnv, v)
	}
	c.MaxAge = d
	return c, nil
}

// Identity is what a run's outcome depends on besides its CRs and the answers it gets.
type Identity struct {
	// Module is the module's sha256.
	Module modulecache.Digest
	// Prefix is the hook's env prefix; Binding its binding name (both after the command line's
	// overrides).
	Prefix, Binding string
	// Environ and Lookup read the process environment.
	Environ func() []string
	Lookup  func(string) (string, bool)
}

// Key digests the identity: the format, the module, every <PREFIX>_* variable (memo.SettingsDigest:
// grants, profile, prune, status, …), every OPENSTACK_SYNC_* variable and POD_NAMESPACE (the
// host's own settings), the binding name and the host's build. A change in any misses.
func Key(id Identity) [sha256.Size]byte {
	h := sha256.New()
	field(h, []byte(keyFormat))
	field(h, id.Module[:])
	settings := memo.SettingsDigest(id.Prefix, id.Environ, id.Lookup)
	field(h, settings[:])
	host := memo.SettingsDigest("OPENSTACK_SYNC", id.Environ, id.Lookup)
	field(h, host[:])
	ns, _ := id.Lookup("POD_NAMESPACE")
	field(h, []byte(ns))
	field(h, []byte(id.Prefix))
	field(h, []byte(id.Binding))
	field(h, []byte(build()))
	var k [sha256.Size]byte
	h.Sum(k[:0])
	return k
}

// build names the running host: a new host may decide differently on the same answers. The
// module cache of a new image starts empty in the chart; this covers a cache kept across builds.
func build() string {
	var b strings.Builder
	if bi, ok := debug.ReadBuildInfo(); ok {
		b.WriteString(bi.GoVersion + " " + bi.Main.Path + "@" + bi.Main.Version)
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" || s.Key == "vcs.modified" {
				b.WriteString(" " + s.Key + "=" + s.Value)
			}
		}
	}
	if exe, err := os.Executable(); err == nil {
		if st, err := os.Stat(exe); err == nil {
			fmt.Fprintf(&b, " %d %d", st.Size(), st.ModTime().UnixNano())
		}
	}
	return b.String()
}

// ErrNotReplayable says a plan has something a replay never stands for.
var ErrNotReplayable = errors.New("not a run a replay stands for")

// CRDigest digests the CRs of a plan as the host reads them: for every CR to reconcile and every
// desired one, in the plan's order (the order the guest sees them in), each field the host's own
// decisions or the guest's input read (API version, kind, UID, namespace, name, generation, spec,
// status, finalizers, deletion, credentials), and the groups a prune sweeps. resourceVersion is
// left out on purpose: it changes with any write to the object (a label, an annotation, another
// manager's field) that nothing in a run reads, and the host uses it only as the precondition of
// a finalizer patch, which a replayed run never makes. A plan with CRs being deleted,
// unreadable CRs, or of the progress schedule is never replayed: each of those acts or reports.
func CRDigest(plan planner.Plan) ([sha256.Size]byte, error) {
	var d [sha256.Size]byte
	switch {
	case len(plan.Deleted) > 0:
		return d, fmt.Errorf("%w: %d CRs are being deleted", ErrNotReplayable, len(plan.Deleted))
	case len(plan.Unreadable) > 0:
		return d, fmt.Errorf("%w: %d CRs could not be read", ErrNotReplayable, len(plan.Unreadable))
	case plan.Progress:
		return d, fmt.Errorf("%w: a progress run", ErrNotReplayable)
	}
	h := sha256.New()
	field(h, []byte(keyFormat))
	var buf []byte
	for _, list := range [][]*resource.Resource{plan.Reconcile, plan.Desired} {
		buf = binary.AppendUvarint(buf[:0], uint64(len(list)))
		h.Write(buf)
		for _, cr := range list {
			buf = appendCR(buf[:0], cr)
			h.Write(buf)
		}
	}
	buf = binary.AppendUvarint(buf[:0], uint64(len(plan.PruneCredentials)))
	for _, c := range plan.PruneCredentials {
		buf = appendCreds(buf, c)
	}
	h.Write(buf)
	h.Sum(d[:0])
	return d, nil
}

// FileDigest digests a binding-context file's bytes. The plan is a function of them and of the
// settings the key covers, so a run whose file is byte for byte the recorded run's has the same
// CRs without reading one: at 20,000 CRs, reading them was most of a replayed run's CPU.
// shell-operator writes the same bytes for the same objects (a Schedule run's snapshot, a
// start-up Synchronization); any other run falls back to CRDigest.
func FileDigest(path string) ([sha256.Size]byte, error) {
	var d [sha256.Size]byte
	f, err := os.Open(path)
	if err != nil {
		return d, err
	}
	defer f.Close()
	h := sha256.New()
	field(h, []byte(keyFormat+" binding context"))
	if _, err := io.Copy(h, f); err != nil {
		return d, err
	}
	h.Sum(d[:0])
	return d, nil
}

// appendCR appends the fields of cr a digest covers, each length-prefixed.
func appendCR(b []byte, cr *resource.Resource) []byte {
	for _, s := range []string{cr.APIVersion, cr.Kind, cr.Namespace, cr.Name, cr.UID} {
		b = appendField(b, []byte(s))
	}
	if cr.Generation == nil {
		b = append(b, 0)
	} else {
		b = binary.BigEndian.AppendUint64(append(b, 1), uint64(*cr.Generation))
	}
	b = appendField(b, cr.Spec)
	st := cr.StatusJSON()
	if st == nil {
		b = append(b, 0)
	} else {
		b = appendField(append(b, 1), st)
	}
	b = binary.AppendUvarint(b, uint64(len(cr.Finalizers)))
	for _, f := range cr.Finalizers {
		b = appendField(b, []byte(f))
	}
	if cr.Deleting {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	return appendCreds(b, cr.Credentials)
}

func appendCreds(b []byte, c plugin.Credentials) []byte {
	return appendField(appendField(appendField(b, []byte(c.Namespace)), []byte(c.SecretName)), []byte(c.CloudName))
}

func appendField(b, f []byte) []byte { return append(binary.AppendUvarint(b, uint64(len(f))), f...) }

func field(h hash.Hash, b []byte) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(b)))
	h.Write(n[:])
	h.Write(b)
}

// VolatileHeaders are the response headers an answer's digest leaves out: they differ between
// identical requests (the time, the request's id, the connection), and a deterministic plugin
// MUST NOT decide on them (docs/abi.md, "The run replay").
var VolatileHeaders = []string{"Date", "X-Openstack-Request-Id", "Openstack-Request-Id", "X-Compute-Request-Id",
	"X-Request-Id", "X-Trans-Id", "Connection", "Keep-Alive"}

// Answer digests one answer: its status code, every header but the volatile ones (names and
// values, sorted by name) and its body.
func Answer(resp *plugin.Response) [sha256.Size]byte {
	h := sha256.New()
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(resp.StatusCode))
	h.Write(b[:])
	names := make([]string, 0, len(resp.Header))
	for name := range resp.Header {
		if !slices.Contains(VolatileHeaders, http.CanonicalHeaderKey(name)) {
			names = append(names, name)
		}
	}
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Compare(http.CanonicalHeaderKey(a), http.CanonicalHeaderKey(b))
	})
	binary.BigEndian.PutUint64(b[:], uint64(len(names)))
	h.Write(b[:])
	for _, name := range names {
		field(h, []byte(http.CanonicalHeaderKey(name)))
		vs := resp.Header[name]
		binary.BigEndian.PutUint64(b[:], uint64(len(vs)))
		h.Write(b[:])
		for _, v := range vs {
			field(h, []byte(v))
		}
	}
	field(h, resp.Body)
	var d [sha256.Size]byte
	h.Sum(d[:0])
	return d
}

// Fresh reports whether a record made at may stand for a run now: no older than maxAge and not
// dated after now (a clock set back, or a record not made here).
func Fresh(at int64, now time.Time, maxAge time.Duration) bool {
	made := time.Unix(at, 0)
	return !made.After(now) && now.Sub(made) <= maxAge
}
