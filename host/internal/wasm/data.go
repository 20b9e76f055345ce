package wasm

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/tetratelabs/wazero/api"

	"github.com/openstack-sync/openstack-sync/host/internal/modulecache"
)

// The data the host lifted out of a module (liftable) is written into each instance's memory by
// applyData, after wazero instantiated the module and before the guest's _initialize. It comes
// from the heap on the load that shaped the module, and from its own cache file
// (modulecache.Data), beside the shaped module, on every later one: read through a small buffer
// straight into the guest's memory, so the process never holds a second copy of it.

// errDataDamaged is lifted data whose bytes are not what the shaping writes.
var errDataDamaged = modulecache.ErrDamaged

// liftedData is where an instance's lifted data comes from: bytes, or the data file of the
// module digest in the cache. The zero value is a module that keeps its data section.
type liftedData struct {
	bytes  []byte
	cache  modulecache.Dir
	digest modulecache.Digest
}

func (d liftedData) none() bool { return d.bytes == nil && d.cache == "" }

func (d liftedData) path() string { return d.cache.Path(modulecache.Data, d.digest.String()) }

// apply writes the data into mem.
func (d liftedData) apply(mem api.Memory) error {
	switch {
	case d.bytes != nil:
		return applyData(mem, bufio.NewReader(bytes.NewReader(d.bytes)))
	case d.cache != "":
		return d.cache.Stream(modulecache.Data, d.digest.String(), d.digest, func(r *bufio.Reader, _ int64) error {
			return applyData(mem, r)
		})
	}
	return nil
}

// check reads the cached data through a small buffer before any instance starts and reports
// whether it is intact and every segment fits a memory of minPages pages, as the shaping left it
// (liftable): a file that passes the cache's check but would fail every instance's start is found
// here, while load can still shape the module again.
func (d liftedData) check(minPages uint32) error {
	if d.cache == "" {
		return nil
	}
	return d.cache.Stream(modulecache.Data, d.digest.String(), d.digest, func(r *bufio.Reader, size int64) error {
		if size == 0 {
			return nil
		}
		return walkData(r, func(i, offset, n uint64) error {
			if offset+n > uint64(minPages)*pageSize {
				return fmt.Errorf("data segment %d (%d bytes at %d) does not fit the memory's minimum of %d pages: %w",
					i, n, offset, minPages, errDataDamaged)
			}
			_, err := r.Discard(int(n))
			return err
		})
	})
}

// applyData writes a data section body as appendBody writes it (active segments on memory 0 at
// i32.const offsets) into mem. shapeModule checked every segment against the memory's minimum;
// a segment that does not fit still fails here, naming it, rather than writing past the memory.
func applyData(mem api.Memory, r *bufio.Reader) error {
	if mem == nil {
		return errors.New("the module has data for a memory it does not have")
	}
	return walkData(r, func(i, offset, size uint64) error {
		view, ok := mem.Read(uint32(offset), uint32(size))
		if !ok || offset+size > uint64(mem.Size()) {
			return fmt.Errorf("data segment %d (%d bytes at %d) does not fit the memory of %d bytes", i, size, offset, mem.Size())
		}
		if _, err := io.ReadFull(r, view); err != nil {
			return errDataDamaged
		}
		return nil
	})
}

// walkData reads a data section body as appendBody writes it and calls segment with each
// segment's place and size, before its bytes, which segment must consume.
func walkData(r *bufio.Reader, segment func(i, offset, size uint64) error) error {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return errDataDamaged
	}
	for i := range n {
		var head [2]byte
		if _, err := io.ReadFull(r, head[:]); err != nil || head != [2]byte{0, 0x41} {
			return errDataDamaged
		}
		offset, err := readSleb32(r)
		if err != nil || offset < 0 {
			return errDataDamaged
		}
		if end, err := r.ReadByte(); err != nil || end != 0x0b {
			return errDataDamaged
		}
		size, err := binary.ReadUvarint(r)
		if err != nil || size > 1<<32 {
			return errDataDamaged
		}
		if err := segment(i, uint64(offset), size); err != nil {
			return err
		}
	}
	return nil
}

// readSleb32 reads a signed LEB128 of at most 32 bits.
func readSleb32(r io.ByteReader) (int32, error) {
	var v int64
	for shift := 0; shift < 35; shift += 7 {
		b, err := r.ReadByte()
		if err != nil {
			return 0, err
		}
		v |= int64(b&0x7f) << shift
		if b&0x80 == 0 {
			if b&0x40 != 0 { // sign-extend
				v |= -1 << (shift + 7)
			}
			if v < -1<<31 || v > 1<<31-1 {
				return 0, errDataDamaged
			}
			return int32(v), nil
		}
	}
	return 0, errDataDamaged
}
