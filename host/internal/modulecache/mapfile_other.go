//go:build !unix

package modulecache

import "os"

// mapFile reads the file where there is no mmap.
func mapFile(path string) ([]byte, func(), error) {
	b, err := os.ReadFile(path)
	return b, func() {}, err
}
