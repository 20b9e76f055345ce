package wasm

import (
	"github.com/openstack-sync/openstack-sync/host/internal/metrics"
)

// SandboxRefusal names how the sandbox stopped the call (plugin.SandboxRefusal): "limit" for a
// time, memory or size limit, "trap" for a panic, trap or ABI fault; "" for a cancelled call,
// which the host, not the plugin, ended.
func (e *CallError) SandboxRefusal() string {
	switch e.Kind {
	case "timeout", "out of memory", "protocol":
		return "limit"
	case "panic", "trap", "exit", "abi":
		return "trap"
	}
	return ""
}

// grantRefusedError is a call that failed after the grant refused at least one of its requests:
// most likely because of it, so the runner can say so on the CR.
type grantRefusedError struct {
	err     error
	refused int
}

func (e *grantRefusedError) Error() string          { return e.err.Error() }
func (e *grantRefusedError) Unwrap() error          { return e.err }
func (e *grantRefusedError) SandboxRefusal() string { return "grant" }

// refused counts one sandbox stop of kind on the plugin.
func (p *Plugin) refused(kind string) {
	if kind != "" {
		metrics.Add(p.opts.Metrics, metrics.SandboxRefusals, 1, p.name, kind)
	}
}

func cacheState(enabled bool) string {
	if enabled {
		return "enabled"
	}
	return "disabled"
}
