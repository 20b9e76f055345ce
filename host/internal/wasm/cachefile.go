package wasm

import (
	"errors"
	"os"
	"path/filepath"
)

// writeCacheFile writes parts to path as one file, written whole under a temporary name and then
// renamed, so a concurrent reader (another hook run on the node) sees the old file or the new
// one, never half of either. The directory is created when missing.
func writeCacheFile(path, pattern string, parts ...[]byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return err
	}
	for _, p := range parts {
		if _, err = f.Write(p); err != nil {
			break
		}
	}
	if err = errors.Join(err, f.Close()); err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
