// Package abi is what the host and its plugins must agree on, in one place both import (as
// wazero's api package is for wazero and its users): the ABI version and entry point names, the
// JSON messages that cross the boundary, the rules and limits the host applies to a plugin's
// metadata and results, the error markers both sides read (a reason, permanence) and the kinds
// of error the host reports (docs/abi.md). The grant rule is its subpackage grant.
//
// The PDK checks a plugin against these rules when it registers, and pdktest answers as the host
// would, so a plugin that passes its own tests is not refused at load; the host
// (host/internal/wasm) applies them to every module, whatever PDK built it.
//
// The package imports nothing but the standard library and its subpackage, and is part of the PDK's API (the API
// check of pdk/API_BASELINE covers it): the host's module requires the PDK's for it, never the
// other way round (RATIONALE.md, "Where do the host and the PDK share code?").
package abi
