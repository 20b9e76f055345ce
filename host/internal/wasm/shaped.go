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

// The shaped module is kept next to the compiled code, its lifted data (data.go) beside it. A
// hook run that finds the module's metadata record (this node loaded the same bytes before) would
// shape them again (structure.go: every section walked, the data segments merged and lifted out,
// the 4 MB module copied onto the heap), only to get the bytes the compilation cache is keyed by:
// ~8-12 ms of CPU and ~1,400 page faults in a fresh process. It maps the shaped bytes instead.
// They are trusted as the compiled code beside them is, which wazero runs natively: written by this host after a load of the same module
// passed every check, keyed by the module's sha256 and by shapedVersion, and checked for damage
// (a CRC-32C trailer) before use; anything else is ignored, and the module is shaped again.
const shapedDir = "shaped"

// shapedVersion names what shapeModule produces. Bump it with any change to the shaping's
// output (TestShapedVersionNamesTheShaping fails until then): a module shaped under other rules
// must not be used.
const shapedVersion = 2

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func shapedPath(cacheDir, digest string) string { return shapedFile(cacheDir, digest, ".wasm") }

// shapedFile is the cache file of the module digest's shaping with extension ext.
func shapedFile(cacheDir, digest, ext string) string {
	return filepath.Join(cacheDir, shapedDir, "v"+strconv.Itoa(shapedVersion)+"-"+digest+ext)
}

// forgetShaped removes the module's shaped bytes and its data, so that the next load shapes the
// module again and writes both.
func forgetShaped(cacheDir, digest string) {
	os.Remove(dataPath(cacheDir, digest))
	os.Remove(shapedPath(cacheDir, digest))
}

// readShaped maps the module's shaped bytes when they and its lifted data are cached and intact;
// nil otherwise. release unmaps them; the bytes must not be used after, and only inside
// readingMapped. The data file is only checked here, never read into the process (data.go).
func (p *Plugin) readShaped(cacheDir, digest string) (shaped []byte, data liftedData, release func()) {
	if cacheDir == "" {
		return nil, liftedData{}, nil
	}
	path := shapedPath(cacheDir, digest)
	b, unmap, err := mapModule(path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			p.log.Warn("cannot read the cached shaped module; shaping the module", "error", err.Error())
		}
		return nil, liftedData{}, nil
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
		return nil, liftedData{}, nil
	}
	dpath := dataPath(cacheDir, digest)
	size, err := checkDataFile(dpath)
	if err != nil {
		unmap()
		if !errors.Is(err, fs.ErrNotExist) {
			p.log.Warn("ignoring the cached data of the shaped module; shaping the module", "file", dpath, "error", err.Error())
		}
		// Both go, and this load writes both anew: a shaped module is only used with its data.
		forgetShaped(cacheDir, digest)
		return nil, liftedData{}, nil
	}
	if size > 0 {
		data = liftedData{dir: cacheDir, digest: digest}
	}
	released := false
	return b[:len(b)-4], data, func() {
		if !released {
			released = true
			unmap()
		}
	}
}

// writeShaped caches the module's shaped bytes and its lifted data (an empty body when it has
// none), each written whole and then renamed, the data first: a shaped module found in the cache
// always has its data beside it. Failing costs the next run the shaping, never correctness, so it
// is only logged. It reports whether the data file is in place.
func (p *Plugin) writeShaped(cacheDir, digest string, sh shape) bool {
	if cacheDir == "" {
		return false
	}
	path, dpath := shapedPath(cacheDir, digest), dataPath(cacheDir, digest)
	if _, err := os.Stat(path); err == nil {
		if _, err := os.Stat(dpath); err == nil {
			return true
		}
	}
	err := writeCacheFile(dpath, ".data-*", sh.data, binary.LittleEndian.AppendUint32(nil, crc32.Checksum(sh.data, castagnoli)))
	if err == nil {
		err = writeCacheFile(path, ".shaped-*", sh.module, binary.LittleEndian.AppendUint32(nil, crc32.Checksum(sh.module, castagnoli)))
	}
	if err != nil {
		p.log.Warn("cannot cache the shaped module; the next run shapes it again", "error", err.Error())
		return false
	}
	return true
}
