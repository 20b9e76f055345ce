package modulecache

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io/fs"
)

// The replay record (kind Replay) is what the host keeps of a plugin's last converged hook run, so
// that the next run, when nothing changed, can be answered by re-sending the run's reads instead
// of running the module (host/internal/replay, docs/abi.md "The run replay"). It lives beside the
// memo under the plugin's env prefix, its header naming the module it was recorded with; this
// file is its body's format. The body is read whole and decoded before anything acts on it: a
// body that does not decode exactly (a length past the end, bytes left over) is damaged.

// ReplayRecord is one converged run.
type ReplayRecord struct {
	// Key digests everything the run's outcome depends on besides its CRs and its answers (the
	// module, the settings, the host); CRs digests the CRs as the host read them; Contexts the
	// binding-context file's bytes, which decide the CRs (the same bytes spare reading them).
	Key, CRs, Contexts [sha256.Size]byte
	// At is when the full run was made, in Unix seconds.
	At int64
	// CRCount is how many CRs the run reconciled, for its log line.
	CRCount int
	// Groups are the run's sessions in the order the run opened them.
	Groups []ReplayGroup
	// Lines are the log lines the run wrote that a replay repeats, each encoded by its writer.
	Lines [][]byte
}

// ReplayGroup is one credential group's session and the requests it sent, in order.
type ReplayGroup struct {
	Namespace, SecretName, CloudName string
	Requests                         []ReplayRequest
}

// ReplayRequest is one request as its writer encodes it, and the digest of its answer.
type ReplayRequest struct {
	Request []byte
	Answer  [sha256.Size]byte
}

// Bounds of one record: a run past them is not recorded (its next run runs in full).
const (
	MaxReplayBytes    = 32 << 20
	MaxReplayRequests = 1 << 18
	MaxReplayLines    = 1 << 17
	maxReplayField    = 1 << 20
)

// EncodeReplay writes r as a record's body.
func EncodeReplay(r ReplayRecord) []byte {
	b := make([]byte, 0, 256)
	b = append(b, r.Key[:]...)
	b = append(b, r.CRs[:]...)
	b = append(b, r.Contexts[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(r.At))
	b = binary.AppendUvarint(b, uint64(r.CRCount))
	b = binary.AppendUvarint(b, uint64(len(r.Groups)))
	for _, g := range r.Groups {
		for _, s := range []string{g.Namespace, g.SecretName, g.CloudName} {
			b = appendField(b, []byte(s))
		}
		b = binary.AppendUvarint(b, uint64(len(g.Requests)))
		for _, q := range g.Requests {
			b = appendField(b, q.Request)
			b = append(b, q.Answer[:]...)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(r.Lines)))
	for _, l := range r.Lines {
		b = appendField(b, l)
	}
	return b
}

func appendField(b, f []byte) []byte {
	return append(binary.AppendUvarint(b, uint64(len(f))), f...)
}

// DecodeReplay reads a record's body; ErrDamaged when it is not exactly one record within the
// bounds. The record's byte slices alias body.
func DecodeReplay(body []byte) (ReplayRecord, error) {
	d := decoder{b: body}
	var r ReplayRecord
	d.fixed(r.Key[:])
	d.fixed(r.CRs[:])
	d.fixed(r.Contexts[:])
	var at [8]byte
	d.fixed(at[:])
	r.At = int64(binary.BigEndian.Uint64(at[:]))
	if n := d.uvarint(); n <= 1<<31 {
		r.CRCount = int(n)
	} else {
		d.err = ErrDamaged
	}
	requests := 0
	for range d.count(MaxReplayRequests) {
		if d.err != nil {
			break
		}
		g := ReplayGroup{Namespace: string(d.field()), SecretName: string(d.field()), CloudName: string(d.field())}
		n := d.count(MaxReplayRequests - requests)
		requests += n
		for range n {
			if d.err != nil {
				break
			}
			q := ReplayRequest{Request: d.field()}
			d.fixed(q.Answer[:])
			g.Requests = append(g.Requests, q)
		}
		r.Groups = append(r.Groups, g)
	}
	for range d.count(MaxReplayLines) {
		if d.err != nil {
			break
		}
		r.Lines = append(r.Lines, d.field())
	}
	if d.err == nil && len(d.b) != 0 {
		d.err = ErrDamaged
	}
	if d.err != nil {
		return ReplayRecord{}, d.err
	}
	return r, nil
}

// decoder reads a body front to back, remembering the first failure.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fixed(out []byte) {
	if d.err != nil || len(d.b) < len(out) {
		d.err = ErrDamaged
		return
	}
	copy(out, d.b)
	d.b = d.b[len(out):]
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = ErrDamaged
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a count of at most limit (each item takes at least a byte, so at most what is left).
func (d *decoder) count(limit int) int {
	v := d.uvarint()
	if d.err == nil && (v > uint64(limit) || v > uint64(len(d.b))) {
		d.err = ErrDamaged
	}
	if d.err != nil {
		return 0
	}
	return int(v)
}

func (d *decoder) field() []byte {
	n := d.uvarint()
	if d.err == nil && (n > maxReplayField || n > uint64(len(d.b))) {
		d.err = ErrDamaged
	}
	if d.err != nil {
		return nil
	}
	f := d.b[:n:n]
	d.b = d.b[n:]
	return f
}

// ReadReplay returns the replay record kept under key (a plugin's env prefix) for module;
// fs.ErrNotExist when there is none (or no cache directory), ErrForeign or ErrDamaged when the
// file is not one to use.
func (d Dir) ReadReplay(key string, module Digest) (ReplayRecord, error) {
	if d == "" {
		return ReplayRecord{}, fs.ErrNotExist
	}
	body, err := d.Read(Replay, key, module)
	if err != nil {
		return ReplayRecord{}, err
	}
	return DecodeReplay(body)
}

// WriteReplay keeps r under key for module; a record past maxBytes (MaxReplayBytes when 0 or
// larger) is not written, and the old one goes (it no longer describes the last run).
func (d Dir) WriteReplay(key string, module Digest, r ReplayRecord, maxBytes int) error {
	if d == "" {
		return nil
	}
	if maxBytes <= 0 || maxBytes > MaxReplayBytes {
		maxBytes = MaxReplayBytes
	}
	body := EncodeReplay(r)
	if len(body) > maxBytes {
		d.Forget(Replay, key)
		return &ReplayTooLargeError{Size: len(body), Max: maxBytes}
	}
	return d.Write(Replay, key, module, body)
}

// ReplayTooLargeError is a run whose record would pass its bound: it is not recorded.
type ReplayTooLargeError struct {
	Size, Max int
}

func (e *ReplayTooLargeError) Error() string {
	return fmt.Sprintf("the run's record (%d bytes) is past its bound of %d bytes", e.Size, e.Max)
}
