package modulecache

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sampleReplay() ReplayRecord {
	return ReplayRecord{
		Key: sha256.Sum256([]byte("key")), CRs: sha256.Sum256([]byte("crs")), Contexts: sha256.Sum256([]byte("ctx")), At: 1_800_000_000, CRCount: 20_000,
		Groups: []ReplayGroup{
			{Namespace: "openstack", SecretName: "cloud", CloudName: "prod", Requests: []ReplayRequest{
				{Request: []byte(`{"method":"GET","path":"v1/runbooks"}`), Answer: sha256.Sum256([]byte("a"))},
				{Request: []byte(`{"method":"GET","path":"/"}`), Answer: sha256.Sum256([]byte("b"))},
			}},
			{Namespace: "team-b", SecretName: "cloud", CloudName: "prod"},
		},
		Lines: [][]byte{[]byte(`{"msg":"needs manual action"}`)},
	}
}

// A replay record is used only when it is the module's, intact, and exactly one record: every
// other file is an error the replay answers with a full run.
func TestTheReplayRecordIsTrustedOnlyWhole(t *testing.T) {
	good := EncodeReplay(sampleReplay())
	cases := []struct {
		name  string
		write func(d Dir)
		want  error
	}{
		{name: "intact", write: func(d Dir) { require.NoError(t, d.WriteReplay("P", moduleA, sampleReplay(), 0)) }},
		{name: "missing", write: func(Dir) {}, want: os.ErrNotExist},
		{name: "another module's", write: func(d Dir) { require.NoError(t, d.WriteReplay("P", moduleB, sampleReplay(), 0)) }, want: ErrForeign},
		{name: "another kind under its name", write: func(d Dir) {
			require.NoError(t, d.Write(Kind{ID: 4, Dir: Replay.Dir, Ext: Replay.Ext, Version: Replay.Version}, "P", moduleA, good))
		}, want: ErrForeign},
		{name: "truncated body with a valid checksum", write: func(d Dir) {
			require.NoError(t, d.Write(Replay, "P", moduleA, good[:len(good)-3]))
		}, want: ErrDamaged},
		{name: "bytes after the record", write: func(d Dir) { require.NoError(t, d.Write(Replay, "P", moduleA, good, []byte{0})) }, want: ErrDamaged},
		{name: "a count past the bound", write: func(d Dir) {
			b := append(append([]byte(nil), good[:3*sha256.Size+8]...), binary.AppendUvarint(nil, 2)...)
			b = binary.AppendUvarint(b, MaxReplayRequests+1)
			require.NoError(t, d.Write(Replay, "P", moduleA, b))
		}, want: ErrDamaged},
		{name: "a flipped byte", write: func(d Dir) {
			require.NoError(t, d.WriteReplay("P", moduleA, sampleReplay(), 0))
			b, err := os.ReadFile(d.Path(Replay, "P"))
			require.NoError(t, err)
			b[len(b)/2] ^= 1
			require.NoError(t, os.WriteFile(d.Path(Replay, "P"), b, 0o644))
		}, want: ErrDamaged},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Dir(t.TempDir())
			tc.write(d)
			got, err := d.ReadReplay("P", moduleA)
			if tc.want != nil {
				assert.ErrorIs(t, err, tc.want)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, sampleReplay(), got)
		})
	}
}

// A run too large to record leaves no record behind: the one on disk described an earlier run.
// The bound is the caller's when it is below the host's.
func TestAReplayPastTheBoundIsNotWritten(t *testing.T) {
	big := sampleReplay()
	big.Lines = [][]byte{make([]byte, maxReplayField)}
	for range MaxReplayBytes / maxReplayField {
		big.Groups[0].Requests = append(big.Groups[0].Requests, ReplayRequest{Request: make([]byte, maxReplayField)})
	}
	small := sampleReplay()
	size := len(EncodeReplay(small))
	for name, tc := range map[string]struct {
		r        ReplayRecord
		maxBytes int
		written  bool
	}{
		"past the host's bound":                   {r: big, maxBytes: 0},
		"past the host's bound, asked for more":   {r: big, maxBytes: 64 << 20},
		"past the caller's bound":                 {r: small, maxBytes: size - 1},
		"at the caller's bound":                   {r: small, maxBytes: size, written: true},
		"within the host's bound, none asked for": {r: small, written: true},
	} {
		t.Run(name, func(t *testing.T) {
			d := Dir(t.TempDir())
			require.NoError(t, d.WriteReplay("P", moduleA, sampleReplay(), 0))
			err := d.WriteReplay("P", moduleA, tc.r, tc.maxBytes)
			_, readErr := d.ReadReplay("P", moduleA)
			if tc.written {
				require.NoError(t, err)
				assert.NoError(t, readErr)
				return
			}
			var tooLarge *ReplayTooLargeError
			require.ErrorAs(t, err, &tooLarge)
			assert.Equal(t, len(EncodeReplay(tc.r)), tooLarge.Size)
			assert.Equal(t, min(cmp.Or(tc.maxBytes, MaxReplayBytes), MaxReplayBytes), tooLarge.Max)
			assert.ErrorIs(t, readErr, os.ErrNotExist)
		})
	}
}
