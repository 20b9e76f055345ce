package wasm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm/kernel"
	"github.com/openstack-sync/openstack-sync/pdk/abi"
	"github.com/openstack-sync/openstack-sync/pdk/abi/grant"
)

// userSignatures are the host functions of extism:host/user (docs/abi.md).
var userSignatures = map[string]kernel.Signature{
	"openstack_request": {Params: []api.ValueType{api.ValueTypeI64}, Results: []api.ValueType{api.ValueTypeI64}},
	fnInputRead:         {Params: []api.ValueType{api.ValueTypeI64, api.ValueTypeI32, api.ValueTypeI32}, Results: []api.ValueType{api.ValueTypeI32}},
	fnBlockRead:         {Params: []api.ValueType{api.ValueTypeI64, api.ValueTypeI32, api.ValueTypeI32}, Results: []api.ValueType{api.ValueTypeI32}},
	fnBlockWrite:        {Params: []api.ValueType{api.ValueTypeI32, api.ValueTypeI32}, Results: []api.ValueType{api.ValueTypeI64}},
	fnUnchanged:         {Params: []api.ValueType{api.ValueTypeI32, api.ValueTypeI32}, Results: []api.ValueType{api.ValueTypeI32}},
}

func instantiateUser(ctx context.Context, r wazero.Runtime, p *Plugin) error {
	b := r.NewHostModuleBuilder(UserModule)
	s := userSignatures["openstack_request"]
	b.NewFunctionBuilder().
		WithGoFunction(api.GoFunc(func(ctx context.Context, stack []uint64) {
			stack[0] = p.openstackRequest(ctx, stack[0])
		}), s.Params, s.Results).
		WithName("openstack_request").
		Export("openstack_request")
	for name, fn := range map[string]api.GoModuleFunc{fnInputRead: inputRead, fnBlockRead: blockRead,
		fnBlockWrite: blockWrite, fnUnchanged: p.unchangedCall, fnSourceRequest: func(ctx context.Context, _ api.Module, stack []uint64) {
			p.sourceRequestCall(ctx, stack)
		}} {
		s := userSignatures[name]
		b.NewFunctionBuilder().WithGoModuleFunction(fn, s.Params, s.Results).WithName(name).Export(name)
	}
	_, err := b.Instantiate(ctx)
	return err
}

var methods = map[string]bool{"GET": true, "HEAD": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true}

// validHeader reports whether a header can be sent as it is: a name of token characters and
// values without control characters, so nothing can be smuggled past the allow-list.
func validHeader(name string, values []string) bool {
	if name == "" {
		return false
	}
	for _, r := range name {
		if r > 0x7e || r <= ' ' || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
			return false
		}
	}
	for _, v := range values {
		if strings.ContainsFunc(v, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) {
			return false
		}
	}
	return true
}

// openstackRequest serves one guest request: it reads the request block at off and returns the
// offset of the response block.
func (p *Plugin) openstackRequest(ctx context.Context, off uint64) uint64 {
	st := kernel.FromContext(ctx, "openstack_request")
	ci := callFrom(ctx)
	resp := p.serve(ctx, ci, st.Block("openstack_request", off))
	if out := st.WriteBlock(resp); out != 0 {
		return out
	}
	small := encodeHostError(&abi.HostError{Kind: abi.KindTooLarge,
		Message: fmt.Sprintf("the response (%d bytes) does not fit the plugin's kernel memory limit", len(resp))})
	if out := st.WriteBlock(small); out != 0 {
		return out
	}
	panic(&kernel.Fault{Module: UserModule, Func: "openstack_request", Msg: "kernel memory limit exceeded"})
}

func encodeHostError(e *abi.HostError) []byte {
	b, _ := json.Marshal(abi.OpenStackResponse{Error: e})
	return b
}

func (p *Plugin) serve(ctx context.Context, ci *callInfo, raw []byte) []byte {
	refuse := func(kind string, permanent bool, format string, args ...any) []byte {
		return encodeHostError(&abi.HostError{Kind: kind, Permanent: permanent, Message: fmt.Sprintf(format, args...)})
	}
	var req abi.OpenStackRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		return refuse(abi.KindInvalidRequest, true, "openstack_request: decoding the request: %v", err)
	}
	req.Method = strings.ToUpper(req.Method)
	// Even a refused write means the plugin saw something to change.
	ci.memo.c().Request(req.Method)
	switch {
	case req.Service == "":
		return refuse(abi.KindInvalidRequest, true, "openstack_request: service is empty")
	case !methods[req.Method]:
		return refuse(abi.KindInvalidRequest, true, "openstack_request: unsupported method %q", req.Method)
	case len(req.Path) > abi.MaxPathBytes:
		return refuse(abi.KindInvalidRequest, true, "openstack_request: path of %d bytes exceeds the limit of %d bytes",
			len(req.Path), abi.MaxPathBytes)
	case grant.CheckPath(req.Path) != nil:
		// The one path rule, the PDK's too (pdk/abi/grant); the refusal
		// names the segment and why, in the PDK's words.
		return refuse(abi.KindInvalidRequest, true, "%s", p.grants.Explain(req.Service, req.Method, req.Path))
	}
	header := http.Header{}
	for k, vs := range req.Headers {
		ck := http.CanonicalHeaderKey(k)
		if !validHeader(k, vs) {
			return refuse(abi.KindInvalidRequest, true, "openstack_request: header %q has a malformed name or value", cut(k))
		}
		if !plugin.Forwardable(ck) {
			return refuse(abi.KindInvalidRequest, true, "openstack_request: header %s is not one a plugin may send (allowed: %s)",
				ck, plugin.ForwardableHeaders())
		}
		header[ck] = vs
	}
	if !p.grants.Allows(req.Service, req.Method, req.Path) {
		why := p.grants.Explain(req.Service, req.Method, req.Path)
		p.refused("grant")
		if ci.refused++; ci.refused <= maxRefusalLogs {
			ci.log.Warn("OpenStack request refused", "entry", ci.entry, "reason", why)
		}
		return refuse(abi.KindGrantDenied, true, "%s", why)
	}
	if ci.session == nil {
		return refuse(abi.KindInvalidRequest, true, "openstack_request: no OpenStack session during %s", ci.entry)
	}
	resp, err := ci.session.Do(ctx, plugin.Request{Service: req.Service, Method: req.Method, Path: req.Path,
		Query: req.Query, Header: header, Microversion: req.Microversion, Body: req.Body})
	if plugin.IsTooLarge(err) {
		p.refused("limit")
		return refuse(abi.KindTooLarge, false, "%s %s %s: %v", req.Method, req.Service, req.Path, err)
	}
	if err != nil {
		permanent := plugin.IsPermanent(err)
		if permanent && ci.permanent == nil {
			ci.permanent = err
		}
		return refuse("session", permanent, "%s %s %s: %v", req.Method, req.Service, req.Path, err)
	}
	// Whatever Session serves (the real one stops reading at the same limit), the guest never
	// gets more.
	if len(resp.Body) > plugin.MaxResponseBytes {
		return refuse(abi.KindTooLarge, false, "%s %s %s: response body of %d bytes exceeds the limit of %d bytes",
			req.Method, req.Service, req.Path, len(resp.Body), plugin.MaxResponseBytes)
	}
	return encodeResponse(resp)
}

// encodeResponse writes the response head as JSON, a newline, then the body as is: the guest
// decodes the small head and hands the body to the plugin without scanning it a second time.
func encodeResponse(resp *plugin.Response) []byte {
	h := resp.Header
	for _, name := range plugin.CredentialHeaders {
		if _, ok := h[name]; ok {
			h = h.Clone()
			for _, name := range plugin.CredentialHeaders {
				h.Del(name)
			}
			break
		}
	}
	headers, _ := json.Marshal(h)
	b := make([]byte, 0, len(resp.Body)+len(headers)+64)
	b = append(b, `{"status":`...)
	b = strconv.AppendInt(b, int64(resp.StatusCode), 10)
	b = append(b, `,"headers":`...)
	b = append(b, headers...)
	b = append(b, "}\n"...)
	return append(b, resp.Body...)
}
