package wasm

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// The shaped module is kept next to the compiled code. A hook run that finds the module's
// metadata record (this node loaded the same bytes before) would shape them again (structure.go:
// every section walked, the data segments merged, the 4 MB module copied onto the heap), only to
// get the bytes the compilation cache is keyed by: ~8-12 ms of CPU and ~1,400 page faults in a
// fresh process. It maps the shaped bytes instead. They are trusted as the compiled code beside
// them is, which wazero runs natively: written by this host after a load of the same module
// passed every check, keyed by the module's sha256 and by shapedVersion, and checked for damage
// (a CRC-32C trailer) before use; anything else is ignored, and the module is shaped again.
const shapedDir = "shaped"

// shapedVersion names what shapeModule produces. Bump it with any change to the shaping's
// output (TestShapedVersionNamesTheShaping fails until then): a module shaped under other rules
// must not be used.
const shapedVersion = 1

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func shapedPath(cacheDir, digest string) string {
	return filepath.Join(cacheDir, shapedDir, "v"+strconv.Itoa(shapedVersion)+"-"+digest+".wasm")
}

// readShaped maps the module's shaped bytes when they are cached and intact; nil otherwise.
// release unmaps them; the bytes must not be used after, and only inside readingMapped.
func (p *Plugin) readShaped(cacheDir, digest string) (shaped []byte, release func()) {
	if cacheDir == "" {
		return nil, nil
	}
	path := shapedPath(cacheDir, digest)
	b, unmap, err := mapModule(path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			p.log.Warn("cannot read the cached shaped module; shaping the module", "error", err.Error())
		}
		return nil, nil
	}
	intact := false
	if err := readingMapped(path, func() error {
		n := len(b) - 4
		intact = n >= 8 && crc32.Checksum(b[:n], castagnoli) == binary.LittleEndian.Uint32(b[n:])
		return nil
	}); err != nil || !intact {
		unmap()
		// Removed, so that this load writes it anew.
		p.log.Warn("ignoring a damaged cached shaped module; shaping the module", "file", path)
		os.Remove(path)
		return nil, nil
	}
	released := false
	return b[:len(b)-4], func() {
		if !released {
			released = true
			unmap()
		}
	}
}

// writeShaped caches the module's shaped bytes, written whole and then renamed. Failing costs
// the next run the shaping, never correctness, so it is only logged.
func (p *Plugin) writeShaped(cacheDir, digest string, shaped []byte) {
	if cacheDir == "" {
		return
	}
	path := shapedPath(cacheDir, digest)
	if _, err := os.Stat(path); err == nil {
		return
	}
	err := writeCacheFile(path, ".shaped-*", shaped, binary.LittleEndian.AppendUint32(nil, crc32.Checksum(shaped, castagnoli)))
	if err != nil {
		p.log.Warn("cannot cache the shaped module; the next run shapes it again", "error", err.Error())
	}
}
