// Package pdk is the plugin development kit for openstack-sync: it turns a few Go functions into a
// sandboxed WebAssembly plugin that reconciles one Kubernetes custom resource type into OpenStack.
//
// A plugin registers its handlers from an init function (a c-shared wasm module never runs main):
//
//	func init() {
//		pdk.Register(pdk.Plugin{
//			Metadata:   pdk.Metadata{Name: "neutron-router-flavors", ...},
//			WaitForAPI: waitForAPI,
//			Reconcile:  reconcile,
//			Prune:      prune,
//		})
//	}
//
//	func main() {}
//
// and is built with the standard Go toolchain:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -ldflags="-s -w" -o x.wasm .
//
// Under wasm the package talks to the openstack-sync host through the Extism host ABI
// (github.com/extism/go-pdk); under a native build it talks to whatever host it is given, which is
// how package pdktest runs plugin logic under plain `go test`. The plugin never sees credentials,
// the network or the file system: OpenStack is reached through Context.OpenStack, within the grants
// the plugin declares and the operator allows. docs/pdk.md is the author's guide and docs/abi.md
// the contract with the host.
package pdk
