// Package buildcheck holds a test of the plugins' wasm build: the standard library packages a
// plugin links decide which WASI functions the module imports, and the host refuses any outside
// its subset (no file access). The test keeps file-touching packages out of every plugin.
package buildcheck
