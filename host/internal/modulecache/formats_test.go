package modulecache

import (
	"encoding/binary"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// memory is a guest memory for the data file's tests.
type memory []byte

func (m memory) Read(offset, n uint32) ([]byte, bool) {
	if uint64(offset)+uint64(n) > uint64(len(m)) {
		return nil, false
	}
	return m[offset : offset+n], true
}

func (m memory) Size() uint32 { return uint32(len(m)) }

// segment is one active data segment as the shaping writes it: memory 0, i32.const offset.
func segment(offset int32, b []byte) []byte {
	s := []byte{0, 0x41}
	for v := int64(offset); ; v >>= 7 { // signed LEB128
		c := byte(v & 0x7f)
		if (v>>7 == 0 && c&0x40 == 0) || (v>>7 == -1 && c&0x40 != 0) {
			s = append(s, c)
			break
		}
		s = append(s, c|0x80)
	}
	s = append(s, 0x0b)
	return append(binary.AppendUvarint(s, uint64(len(b))), b...)
}

func dataBody(segments ...[]byte) []byte {
	b := binary.AppendUvarint(nil, uint64(len(segments)))
	for _, s := range segments {
		b = append(b, s...)
	}
	return b
}

// The data file is trusted only when it is the pinned module's and intact, and even then only
// when its body is the data section the shaping writes, every segment inside the memory's
// minimum: a file another module made, a damaged one, garbage written with a valid checksum or a
// segment outside the memory is refused before any instance reads it (Check), and an instance
// never writes past its memory (Apply).
func TestTheDataFileIsCheckedBeforeAnyInstanceReadsIt(t *testing.T) {
	good := dataBody(segment(16, []byte("ab")), segment(70000, []byte("cd")))
	cases := []struct {
		name  string
		write func(d Dir)
		want  error
		text  string
	}{
		{name: "intact", write: func(d Dir) { require.NoError(t, d.Write(Data, moduleA.String(), moduleA, good)) }},
		{name: "no data", write: func(d Dir) { require.NoError(t, d.Write(Data, moduleA.String(), moduleA)) }},
		{name: "another module's data", write: func(d Dir) {
			require.NoError(t, d.Write(Data, moduleB.String(), moduleB, good))
			b, err := os.ReadFile(d.Path(Data, moduleB.String()))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(d.Path(Data, moduleA.String()), b, 0o644))
		}, want: ErrForeign},
		{name: "a damaged file", write: func(d Dir) {
			require.NoError(t, d.Write(Data, moduleA.String(), moduleA, good))
			b, err := os.ReadFile(d.Path(Data, moduleA.String()))
			require.NoError(t, err)
			b[len(b)/2] ^= 0xff
			require.NoError(t, os.WriteFile(d.Path(Data, moduleA.String()), b, 0o644))
		}, want: ErrDamaged},
		{name: "garbage with a valid checksum", write: func(d Dir) {
			require.NoError(t, d.Write(Data, moduleA.String(), moduleA, []byte("\x01garbage")))
		}, want: ErrDamaged},
		{name: "a segment outside the memory", write: func(d Dir) {
			require.NoError(t, d.Write(Data, moduleA.String(), moduleA, dataBody(segment(1<<30, []byte("x")))))
		}, want: ErrDamaged, text: "does not fit the memory's minimum of 2 pages"},
		{name: "a segment cut short", write: func(d Dir) {
			require.NoError(t, d.Write(Data, moduleA.String(), moduleA, good[:len(good)-1]))
		}, want: ErrDamaged},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Dir(t.TempDir())
			c.write(d)
			lifted := d.Lifted(moduleA)
			err := lifted.Check(2)
			mem := make(memory, 2*pageSize)
			if c.want != nil {
				require.ErrorIs(t, err, c.want)
				assert.Contains(t, err.Error(), c.text)
				return
			}
			require.NoError(t, err)
			require.NoError(t, lifted.Apply(mem))
			if len(good) > 0 && c.name == "intact" {
				assert.Equal(t, "ab", string(mem[16:18]))
				assert.Equal(t, "cd", string(mem[70000:70002]))
			}
		})
	}
	// A segment past the memory an instance has is refused by Apply too, naming it.
	err := HeapData(dataBody(segment(100, []byte("xyz")))).Apply(make(memory, 101))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "data segment 0 (3 bytes at 100) does not fit the memory of 101 bytes")
}

// A shaped module is used only with its data, both of the pinned module and intact; anything else
// is removed, both halves, so that the load shapes the module again and writes both anew.
func TestAShapedModuleIsUsedOnlyWithItsData(t *testing.T) {
	shaped, data := []byte("\x00asm\x01\x00\x00\x00shaped"), dataBody(segment(0, []byte("d")))
	cases := []struct {
		name   string
		damage func(d Dir)
		check  func(err error) bool
	}{
		{name: "intact"},
		{name: "its data missing", damage: func(d Dir) { d.Forget(Data, moduleA.String()) }, check: IsMissing},
		{name: "another module's shape", damage: func(d Dir) {
			require.NoError(t, d.Write(Shaped, moduleA.String(), moduleB, shaped))
		}, check: IsUntrusted},
		{name: "a damaged shape", damage: func(d Dir) {
			b, err := os.ReadFile(d.Path(Shaped, moduleA.String()))
			require.NoError(t, err)
			b[headerSize] ^= 0xff
			require.NoError(t, os.WriteFile(d.Path(Shaped, moduleA.String()), b, 0o644))
		}, check: IsUntrusted},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Dir(t.TempDir())
			require.NoError(t, d.WriteShaped(moduleA, shaped, data))
			if c.damage != nil {
				c.damage(d)
			}
			got, lifted, release, err := d.MapShaped(moduleA)
			if c.check == nil {
				require.NoError(t, err)
				defer release()
				assert.Equal(t, shaped, got)
				assert.Equal(t, d.Path(Data, moduleA.String()), lifted.Path())
				return
			}
			require.Error(t, err)
			assert.True(t, c.check(err), "%v", err)
			assert.False(t, d.Exists(Shaped, moduleA.String()), "the shape was removed")
			assert.False(t, d.Exists(Data, moduleA.String()), "and its data")
		})
	}
	_, _, _, err := Dir("").MapShaped(moduleA)
	assert.True(t, IsMissing(err), "no cache directory, no shape")
}

// The metadata record and the overrun marker are read only as the pinned module's: another
// module's copied under its name is refused, never taken for this module's.
func TestTheRecordAndTheMarkerAreThePinnedModules(t *testing.T) {
	d := Dir(t.TempDir())
	_, err := d.ReadRecord(moduleA)
	assert.True(t, IsMissing(err))
	require.NoError(t, d.WriteRecord(moduleA, []byte(`{"name":"a"}`)))
	raw, err := d.ReadRecord(moduleA)
	require.NoError(t, err)
	assert.Equal(t, `{"name":"a"}`, string(raw))
	require.NoError(t, d.Write(Record, moduleA.String(), moduleB, []byte(`{"name":"b","grants":[]}`)))
	_, err = d.ReadRecord(moduleA)
	assert.ErrorIs(t, err, ErrForeign, "another module's record")
	d.ForgetRecord(moduleA)
	assert.NoFileExists(t, d.RecordPath(moduleA))

	overran, err := d.Overran(moduleA)
	require.NoError(t, err)
	assert.False(t, overran, "no marker")
	marker, err := d.MarkOverrun(moduleA, OverrunMarker{Plugin: "a", Entry: "reconcile"})
	require.NoError(t, err)
	assert.Equal(t, d.OverrunPath(moduleA), marker)
	overran, err = d.Overran(moduleA)
	require.NoError(t, err)
	assert.True(t, overran)
	require.NoError(t, d.Write(Overrun, moduleA.String(), moduleB, []byte("{}")))
	overran, err = d.Overran(moduleA)
	assert.ErrorIs(t, err, ErrForeign)
	assert.True(t, overran, "a marker that cannot be trusted still says the module may loop")
}
