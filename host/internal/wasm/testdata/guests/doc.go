// Package guests holds the sources of the wasm host's test plugins. Each subdirectory is a main
// package built only for wasip1 (GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared); this file
// exists so that tools walking every module natively find a package here.
package guests
