//go:build !unix

package wasm

import "os"

// mapModule reads the module file where there is no mmap.
func mapModule(path string) ([]byte, func(), error) {
	b, err := os.ReadFile(path)
	return b, func() {}, err
}
