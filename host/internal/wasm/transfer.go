package wasm

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/tetratelabs/wazero/api"

	"github.com/openstack-sync/openstack-sync/host/internal/memo"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm/kernel"
)

// Bulk copies between the guest's memory and the kernel's (docs/abi.md, "Bulk copies"). The
// Extism ABI moves every byte through load_u64/store_u64 and input_load_u64, one host call per 8
// bytes: ~0.2 µs each under wazero, so a CR's 1 KiB input cost ~30 µs and a 100 KiB page of a
// list ~3 ms, more than the guest's own work on a converged CR. These take a pointer and a length
// in the guest's linear memory instead; a guest that does not import them reads and writes as
// before.

const (
	fnInputRead  = "input_read"
	fnBlockRead  = "block_read"
	fnBlockWrite = "block_write"
	fnUnchanged  = "unchanged"
)

// guestSpan returns n bytes of the guest's memory at ptr (aliasing it), or faults the call.
func guestSpan(m api.Module, fn string, ptr, n uint32) []byte {
	b, ok := m.Memory().Read(ptr, n)
	if !ok {
		panic(&kernel.Fault{Module: UserModule, Func: fn,
			Msg: fmt.Sprintf("guest memory [%d, %d) is out of bounds of its %d bytes", ptr, uint64(ptr)+uint64(n), m.Memory().Size())})
	}
	return b
}

// inputRead copies the call's input from offset off into the guest at dst, at most n bytes, and
// returns how many it copied.
func inputRead(ctx context.Context, m api.Module, st []uint64) {
	src := kernel.FromContext(ctx, fnInputRead).Input(fnInputRead, st[0], uint64(uint32(st[2])))
	copy(guestSpan(m, fnInputRead, uint32(st[1]), uint32(len(src))), src)
	st[0] = uint64(len(src))
}

// blockRead copies the kernel block at off into the guest at dst, at most n bytes, and returns
// how many it copied.
func blockRead(ctx context.Context, m api.Module, st []uint64) {
	b := kernel.FromContext(ctx, fnBlockRead).Block(fnBlockRead, st[0])
	b = b[:min(uint64(len(b)), uint64(uint32(st[2])))]
	copy(guestSpan(m, fnBlockRead, uint32(st[1]), uint32(len(b))), b)
	st[0] = uint64(len(b))
}

// blockWrite allocates a kernel block holding the n guest bytes at src and returns its offset, or
// 0 when the kernel's memory limit leaves no room (as alloc does).
func blockWrite(ctx context.Context, m api.Module, st []uint64) {
	b := guestSpan(m, fnBlockWrite, uint32(st[0]), uint32(st[1]))
	st[0] = kernel.FromContext(ctx, fnBlockWrite).WriteBlock(b)
}

// unchangedCall answers whether the reconcile in progress may report the result the host
// recorded: parts points at n pairs of little-endian uint32 (pointer, length), each one piece of
// the plugin's evidence. 1 means a hit. The pieces are read where they are in the guest's memory
// and hashed one after the other: what the host allocates does not grow with the guest's memory
// nor with n, which is bounded before anything is read.
func (p *Plugin) unchangedCall(ctx context.Context, m api.Module, st []uint64) {
	n := uint64(uint32(st[1]))
	if n > memo.MaxPieces {
		panic(&kernel.Fault{Module: UserModule, Func: fnUnchanged,
			Msg: fmt.Sprintf("%d pieces of evidence exceed the limit of %d", n, memo.MaxPieces)})
	}
	pairs := guestSpan(m, fnUnchanged, uint32(st[0]), uint32(n*8))
	piece := func(i int) []byte {
		return guestSpan(m, fnUnchanged, binary.LittleEndian.Uint32(pairs[i*8:]), binary.LittleEndian.Uint32(pairs[i*8+4:]))
	}
	st[0] = 0
	if hit, err := p.unchanged(ctx, int(n), piece); err != nil {
		panic(&kernel.Fault{Module: UserModule, Func: fnUnchanged, Msg: err.Error()})
	} else if hit {
		st[0] = 1
	}
}

// unchanged is the memo's answer for the call in ctx, whatever carried the evidence.
func (p *Plugin) unchanged(ctx context.Context, n int, piece func(i int) []byte) (bool, error) {
	ci := callFrom(ctx)
	if ci == nil {
		return false, nil
	}
	return ci.unchanged(n, piece)
}
