package pdk

import (
	"errors"
	"fmt"

	"github.com/openstack-sync/openstack-sync/pdk/internal/testhook"
)

// LogLevel orders log messages; the host drops levels below its own.
type LogLevel int

const (
	LevelDebug LogLevel = iota + 1
	LevelInfo
	LevelWarn
	LevelError
)

func (l LogLevel) String() string {
	switch l {
	case LevelDebug:
		return "DEBUG"
	case LevelInfo:
		return "INFO"
	case LevelWarn:
		return "WARN"
	case LevelError:
		return "ERROR"
	}
	return fmt.Sprintf("LogLevel(%d)", int(l))
}

// host is the boundary the package talks through. Under wasm it is the openstack-sync host,
// reached through the Extism ABI; package pdktest supplies a fake (through internal/testhook).
// Plugin code never sees it.
type host interface {
	// Config returns the plugin's configuration value for key (the env var <PREFIX>_<key>).
	Config(key string) (string, bool)
	// Log writes one message to the host's log.
	Log(level LogLevel, msg string)
	// OpenStack sends one request. A non-2xx status is a Response, not an error; an error means
	// no response exists (the call was outside the grants, the cloud was unreachable, ...).
	OpenStack(req *Request) (*Response, error)
}

// memoHost is the host side of the convergence memo. A host without it (an older Backend of
// pdktest's, a third party's fake) never reports a CR unchanged.
type memoHost interface {
	Unchanged(evidence [][]byte) bool
}

// Context is what every handler gets: configuration, logging, the group cache and OpenStack.
// It is valid only during the handler call it was passed to.
type Context struct {
	host  host
	cache map[string]any
}

// newContext returns a Context backed by h with the group cache (a new map when nil).
func newContext(h host, cache map[string]any) *Context {
	if cache == nil {
		cache = map[string]any{}
	}
	return &Context{host: h, cache: cache}
}

func init() {
	testhook.NewContext = func(h any, cache map[string]any) any { return newContext(h.(host), cache) }
	testhook.HostOf = func(ctx any) any { return ctx.(*Context).host }
	testhook.SlowDecodes = slowDecodes.Load
	testhook.Unchanged = func(ctx any, evidence [][]byte) bool { return ctx.(*Context).unchanged(evidence) }
	testhook.Recorded = func() any { return recorded() }
	testhook.DecodeJSON = decodeJSON
	testhook.SkipStatus = func(m any) { m.(*Metadata).skipStatus = true }
	testhook.SkipsStatus = func(m any) bool { return m.(*Metadata).skipStatus }
	testhook.EncodeResult = func(res any) ([]byte, bool, error) {
		r := res.(*Result)
		out, werr := encodeResult(r)
		if werr != nil {
			return nil, r.recorded, errors.New(werr.Message)
		}
		return out, r.recorded, nil
	}
	testhook.DecodeReconcile = func(input []byte) (any, error) {
		var msg reconcileMessage
		err := decodeReconcile(input, &msg, registered != nil && registered.Metadata.skipStatus)
		return &msg.ReconcileRequest, err
	}
}

// Cache is a map that lives for one credential group: every Reconcile of the group's CRs sees the
// same map, and nothing in it survives to another group. Use it to share reads (a list of
// existing resources) between CRs, never to carry state between runs.
func (c *Context) Cache() map[string]any { return c.cache }

// Config returns the value of the hook's environment variable <PREFIX>_<key> ("" and false when
// unset). Nothing else of the host's environment reaches the plugin.
func (c *Context) Config(key string) (string, bool) { return c.host.Config(key) }

// Log writes a message at level; the host adds the plugin's name and, during Reconcile, the CR.
func (c *Context) Log(level LogLevel, msg string) { c.host.Log(level, msg) }

// Logf formats a message and logs it at level.
func (c *Context) Logf(level LogLevel, format string, args ...any) {
	c.host.Log(level, fmt.Sprintf(format, args...))
}

// OpenStack returns a client for one catalog service type, e.g. "network" or "baremetal".
func (c *Context) OpenStack(service string) *ServiceClient {
	return &ServiceClient{host: c.host, cache: c.cache, service: service}
}

// unchanged is the convergence memo's question (experimental.Unchanged, docs/abi.md "The
// convergence memo"): false outside Reconcile, with a Backend that has no memo, and with the memo
// off.
func (c *Context) unchanged(evidence [][]byte) bool {
	m, ok := c.host.(memoHost)
	return ok && m.Unchanged(evidence)
}

// recorded is the Result a Reconcile returns after the memo answered true (experimental.Recorded).
func recorded() *Result { return &Result{recorded: true} }
