package modulecache

// The kinds of file the host keeps, each with the version of its body. A change to what a body
// holds or means bumps its version: files of the old version are then foreign (ignored, made
// again), never misread.
var (
	// Record is a module's metadata record: the module's own answer to its metadata entry point,
	// so that --config and hook runs need not start the module to learn it.
	Record = Kind{ID: 1, Dir: "metadata", Ext: ".json", Version: 1, Max: 1 << 20}
	// Shaped is a module as the host compiles it (structural limits applied, data lifted out):
	// ShapedVersion names the shaping that produced it.
	Shaped = Kind{ID: 2, Dir: "shaped", Ext: ".wasm", Version: ShapedVersion}
	// Data is the data lifted out of a shaped module, written into each instance's memory.
	Data = Kind{ID: 3, Dir: "shaped", Ext: ".data", Version: ShapedVersion}
	// Memo is a plugin's convergence memo, kept under its env prefix for the module it belongs to.
	Memo = Kind{ID: 4, Dir: "memo", Ext: ".memo", Version: 2}
	// Overrun marks a module that overran a call deadline under the supervisor.
	Overrun = Kind{ID: 5, Dir: "overrun", Ext: ".json", Version: 1, Max: 64 << 10}
	// Replay is a plugin's last converged run (replay.go), kept under its env prefix for the
	// module it ran.
	Replay = Kind{ID: 6, Dir: "replay", Ext: ".replay", Version: 2, Max: MaxReplayBytes}
)

// ShapedVersion names what the host's module shaping produces (host/internal/wasm/admission, shapeModule).
// Bump it with any change to the shaping's output (wasm's TestShapedVersionNamesTheShaping fails
// until then): a module shaped under other rules must not be used.
const ShapedVersion = 3
