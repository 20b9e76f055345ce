package wasm

import (
	"os"
	"testing"
)

var cleanup []func()

func tempDirOutsideTest() (string, error) {
	dir, err := os.MkdirTemp("", "wasm-cache-*")
	if err == nil {
		cleanup = append(cleanup, func() { os.RemoveAll(dir) })
	}
	return dir, err
}

func TestMain(m *testing.M) {
	if mode := os.Getenv(stackChildEnv); mode != "" {
		os.Exit(stackChild(mode))
	}
	if spec := os.Getenv(memoryChildEnv); spec != "" {
		os.Exit(memoryChild(spec))
	}
	code := m.Run()
	for _, f := range cleanup {
		f()
	}
	os.Exit(code)
}
