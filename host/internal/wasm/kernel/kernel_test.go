package kernel

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var testLimits = Limits{Memory: 1 << 10, Output: 64, Vars: 32}

// call runs one kernel function as a guest would, returning its results or the Fault it raised.
func call(t *testing.T, s *State, name string, args ...uint64) (res []uint64, f *Fault) {
	t.Helper()
	fn, ok := functions[name]
	require.True(t, ok, name)
	stack := make([]uint64, max(len(fn.Params), len(fn.Results)))
	copy(stack, args)
	defer func() {
		if r := recover(); r != nil {
			err, ok := r.(error)
			require.True(t, ok, "kernel functions fault with errors, got %v", r)
			require.True(t, errors.As(err, &f), "want a *Fault, got %v", err)
		}
	}()
	fn.fn(WithState(context.Background(), s), stack)
	return stack[:len(fn.Results)], nil
}

func TestBlocksRoundTrip(t *testing.T) {
	s := NewState(testLimits, nil, nil, LevelInfo)
	s.Reset(nil)
	res, f := call(t, s, "alloc", 11)
	require.Nil(t, f)
	off := res[0]
	assert.NotZero(t, off)
	assert.Zero(t, off%8, "blocks are 8-aligned for go-pdk's word copies")
	_, f = call(t, s, "store_u64", off, 0x0807060504030201)
	require.Nil(t, f)
	_, f = call(t, s, "store_u8", off+8, 9)
	require.Nil(t, f)
	res, _ = call(t, s, "load_u64", off)
	assert.Equal(t, uint64(0x0807060504030201), res[0])
	res, _ = call(t, s, "length", off)
	assert.Equal(t, uint64(11), res[0])
	res, _ = call(t, s, "length", off+1)
	assert.Zero(t, res[0], "length of a non-block offset is 0")
	_, f = call(t, s, "output_set", off, 9)
	require.Nil(t, f)
	out, ok := s.Output()
	assert.True(t, ok)
	assert.Equal(t, []byte{1, 2, 3, 4, 5, 6, 7, 8, 9}, out)

	s.Reset(nil)
	_, ok = s.Output()
	assert.False(t, ok, "a new call starts without output")
	res, _ = call(t, s, "length", off)
	assert.Zero(t, res[0], "blocks do not survive a call")
}

func TestEveryOffsetIsBoundsChecked(t *testing.T) {
	cases := []struct {
		name string
		fn   string
		args []uint64
		want string
	}{
		{"load past the arena", "load_u64", []uint64{4096}, "out of bounds of kernel memory"},
		{"load at null", "load_u64", []uint64{0}, "out of bounds"},
		{"load straddling the end", "load_u64", []uint64{12}, "out of bounds"},
		{"load with overflowing offset", "load_u64", []uint64{^uint64(0) - 3}, "out of bounds"},
		{"store_u8 past the arena", "store_u8", []uint64{1 << 20, 1}, "out of bounds"},
		{"store_u64 past the arena", "store_u64", []uint64{1 << 20, 1}, "out of bounds"},
		{"input past its end", "input_load_u64", []uint64{1}, "out of bounds of the 3-byte input"},
		{"input byte past its end", "input_load_u8", []uint64{3}, "out of bounds of the 3-byte input"},
		{"output past the arena", "output_set", []uint64{8, 60}, "out of bounds"},
		{"output over the limit", "output_set", []uint64{8, 65}, "exceed the output limit of 64 bytes"},
		{"config key not a block", "config_get", []uint64{9}, "not the start of an allocated block"},
		{"log message not a block", "log_info", []uint64{4000}, "not the start of an allocated block"},
		{"error not a block", "error_set", []uint64{12}, "not the start of an allocated block"},
		{"http refused", "http_request", []uint64{8, 0}, "openstack_request"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := NewState(testLimits, nil, nil, LevelInfo)
			s.Reset([]byte("abc"))
			s.Alloc(8)
			_, f := call(t, s, c.fn, c.args...)
			require.NotNil(t, f, "want a fault")
			assert.Equal(t, c.fn, f.Func)
			assert.Contains(t, f.Error(), c.want)
		})
	}
}

func TestAllocStopsAtTheMemoryLimit(t *testing.T) {
	s := NewState(testLimits, nil, nil, LevelInfo)
	s.Reset(nil)
	assert.Zero(t, s.Alloc(2<<10), "a block larger than the arena limit")
	assert.NotZero(t, s.Alloc(900))
	assert.Zero(t, s.Alloc(200), "the arena is full")
}

func TestArenaNeverOutgrowsItsLimit(t *testing.T) {
	const limit = 600 << 10
	s := NewState(Limits{Memory: limit, Output: 64, Vars: 8}, nil, nil, LevelInfo)
	s.Reset(nil)
	for range limit / (40 << 10) {
		s.Alloc(40 << 10)
	}
	assert.Zero(t, s.Alloc(40<<10), "the arena is full")
	assert.LessOrEqual(t, cap(s.arena), limit, "growing by doubling stops at the limit")
}

func TestInputConfigVarsAndLog(t *testing.T) {
	var logged []string
	config := map[string]string{"REGION": "r1"}
	s := NewState(testLimits, func(k string) (string, bool) { v, ok := config[k]; return v, ok },
		func(_ context.Context, level int32, msg string) { logged = append(logged, msg) }, LevelInfo)
	s.Reset([]byte("0123456789"))
	res, _ := call(t, s, "input_length")
	assert.Equal(t, uint64(10), res[0])
	res, _ = call(t, s, "input_load_u64", 2)
	assert.Equal(t, uint64(0x3938373635343332), res[0])

	key := s.WriteBlock([]byte("REGION"))
	res, _ = call(t, s, "config_get", key)
	require.NotZero(t, res[0])
	assert.Equal(t, "r1", string(s.Block("t", res[0])))
	res, _ = call(t, s, "config_get", s.WriteBlock([]byte("HOME")))
	assert.Zero(t, res[0], "only configured keys exist")

	_, f := call(t, s, "var_set", s.WriteBlock([]byte("k")), s.WriteBlock([]byte("value")))
	require.Nil(t, f)
	s.Reset(nil)
	res, _ = call(t, s, "var_get", s.WriteBlock([]byte("k")))
	assert.Equal(t, "value", string(s.Block("t", res[0])), "vars outlive a call")
	_, f = call(t, s, "var_set", s.WriteBlock([]byte("big")), s.WriteBlock(make([]byte, 40)))
	require.NotNil(t, f)
	assert.Contains(t, f.Error(), "over the limit of 32")

	_, _ = call(t, s, "log_debug", s.WriteBlock([]byte("hidden")))
	_, _ = call(t, s, "log_warn", s.WriteBlock([]byte("shown")))
	assert.Equal(t, []string{"shown"}, logged, "messages below the host's level are dropped")
}

func TestErrorSetKeepsTheBlock(t *testing.T) {
	s := NewState(testLimits, nil, nil, LevelInfo)
	s.Reset(nil)
	_, f := call(t, s, "error_set", s.WriteBlock([]byte("boom")))
	require.Nil(t, f)
	msg, ok := s.Error()
	assert.True(t, ok)
	assert.Equal(t, "boom", string(msg))
}

func TestFreeingTheNewestBlocksReclaimsTheirSpace(t *testing.T) {
	s := NewState(Limits{Memory: 256, Output: 64, Vars: 8}, nil, nil, LevelInfo)
	s.Reset(nil)
	for i := range 100 {
		req := s.WriteBlock(make([]byte, 60))
		require.NotZero(t, req, "round %d", i)
		resp := s.WriteBlock(make([]byte, 100))
		require.NotZero(t, resp, "round %d", i)
		// go-pdk order in our pdk: the request is freed before the response is read and freed.
		s.Free(req)
		s.Free(resp)
	}
	kept := s.WriteBlock([]byte("kept"))
	tmp := s.WriteBlock([]byte("tmp"))
	s.Free(tmp)
	assert.Equal(t, "kept", string(s.Block("t", kept)), "freeing a newer block leaves older ones intact")
	_, f := call(t, s, "load_u64", tmp)
	assert.NotNil(t, f, "a reclaimed block is out of bounds")
}

// Empty blocks take no arena space, so without a per-block charge a guest calling alloc(0) in a
// loop grows the host's bookkeeping until the host runs out of memory.
func TestEmptyBlocksCannotGrowTheHostWithoutBound(t *testing.T) {
	s := NewState(Limits{Memory: 64 << 10, Output: 64, Vars: 8}, nil, nil, LevelInfo)
	s.Reset(nil)
	refused := false
	for range 1 << 20 {
		res, f := call(t, s, "alloc", 0)
		require.Nil(t, f)
		if res[0] == 0 {
			refused = true
			break
		}
	}
	require.True(t, refused, "alloc(0) is refused once the blocks' bookkeeping reaches the memory limit")
	assert.LessOrEqual(t, len(s.order)*blockOverhead, 64<<10)

	s.Reset(nil)
	assert.LessOrEqual(t, cap(s.order), keptBlocks, "a call with many blocks does not pin their bookkeeping")
	assert.NotZero(t, s.Alloc(0), "the next call starts with the whole limit")
}

// A guest's log lines become the host's: one huge message is cut, and a loop of messages stops
// reaching the log once the call's budget is spent (the drops are counted for the host to report).
func TestGuestLoggingIsBounded(t *testing.T) {
	var logged []string
	s := NewState(Limits{Memory: 1 << 12, Output: 64, Vars: 8, LogLine: 16, LogBytes: 40}, nil,
		func(_ context.Context, _ int32, msg string) { logged = append(logged, msg) }, LevelInfo)
	s.Reset(nil)
	_, f := call(t, s, "log_error", s.WriteBlock([]byte(strings.Repeat("x", 100))))
	require.Nil(t, f)
	require.Len(t, logged, 1)
	assert.Equal(t, strings.Repeat("x", 16)+"… (84 more bytes cut)", logged[0])

	for range 10 {
		_, f = call(t, s, "log_warn", s.WriteBlock([]byte("0123456789")))
		require.Nil(t, f)
	}
	assert.Len(t, logged, 4, "16 + 3×10 bytes reach the 40-byte budget; the rest is dropped")
	assert.Equal(t, 7, s.LogDropped())

	s.Reset(nil)
	assert.Zero(t, s.LogDropped(), "each call has its own budget")
	_, _ = call(t, s, "log_info", s.WriteBlock([]byte("again")))
	assert.Equal(t, "again", logged[len(logged)-1])
}
