package wasm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/tetratelabs/wazero/api"

	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm/kernel"
	"github.com/openstack-sync/openstack-sync/pdk/abi"
	"github.com/openstack-sync/openstack-sync/pdk/abi/grant"
)

// Sources outside OpenStack (docs/abi.md section 8): the plugin declares each source it reads, by
// name, with method and path grants (metadata "sources"); the operator allow-lists each source's
// URLs (<PREFIX>_SOURCES, which the session behind a call enforces, package source); the guest
// calls source_request with the source, the base URL its CR names and the Secret key of the
// credential, and gets the answer with the credential scrubbed out. The guest never holds the
// credential: the host reads and sends it.

const fnSourceRequest = "source_request"

func init() {
	userSignatures[fnSourceRequest] = kernel.Signature{Params: []api.ValueType{api.ValueTypeI64}, Results: []api.ValueType{api.ValueTypeI64}}
}

// sourceGrants checks the declared sources and returns them as grants (Service is the name).
func (m *metadataMessage) sourceGrants() ([]grant.Grant, error) {
	gs := make([]grant.Grant, 0, len(m.Sources))
	for i, s := range m.Sources {
		if abi.CheckSourceName(s.Name) != nil {
			return nil, fmt.Errorf("sources: source %d: name %q is not a lower-case DNS label", i, cut(s.Name))
		}
		gs = append(gs, grant.Grant{Service: s.Name, Methods: s.Methods, Paths: s.Paths})
	}
	if err := grant.Validate(gs); err != nil {
		return nil, fmt.Errorf("sources: %v", err)
	}
	return gs, nil
}

// sourceRequestMessage is the input of source_request.
type sourceRequestMessage struct {
	Source string `json:"source"`
	URL    string `json:"url"`
	Secret *struct {
		Name string `json:"name"`
		Key  string `json:"key"`
	} `json:"secret"`
	Method  string              `json:"method"`
	Path    string              `json:"path"`
	Query   url.Values          `json:"query"`
	Headers map[string][]string `json:"headers"`
	Body    json.RawMessage     `json:"body"`
}

func (p *Plugin) sourceRequestCall(ctx context.Context, stack []uint64) {
	st := kernel.FromContext(ctx, fnSourceRequest)
	resp := p.serveSource(ctx, callFrom(ctx), st.Block(fnSourceRequest, stack[0]))
	if out := st.WriteBlock(resp); out != 0 {
		stack[0] = out
		return
	}
	small := encodeHostError(&abi.HostError{Kind: abi.KindTooLarge,
		Message: fmt.Sprintf("the response (%d bytes) does not fit the plugin's kernel memory limit", len(resp))})
	if out := st.WriteBlock(small); out != 0 {
		stack[0] = out
		return
	}
	panic(&kernel.Fault{Module: UserModule, Func: fnSourceRequest, Msg: "kernel memory limit exceeded"})
}

// secretNamePattern is a Kubernetes object name; secretKeyPattern a Secret data key. Both are
// compiled at first use: the key's bounded repetition alone took ~1 ms of every hook process's
// start (GODEBUG=inittrace=1), the supervisor's included, which serves no source.
var (
	secretNamePattern = lazyRegexp(`^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$`)
	secretKeyPattern  = lazyRegexp(`^[-._a-zA-Z0-9]{1,253}$`)
)

func (p *Plugin) serveSource(ctx context.Context, ci *callInfo, raw []byte) []byte {
	refuse := func(kind string, permanent bool, format string, args ...any) []byte {
		return encodeHostError(&abi.HostError{Kind: kind, Permanent: permanent, Message: fmt.Sprintf(format, args...)})
	}
	var req sourceRequestMessage
	if err := json.Unmarshal(raw, &req); err != nil {
		return refuse(abi.KindInvalidRequest, true, "source_request: decoding the request: %v", err)
	}
	req.Method = strings.ToUpper(req.Method)
	ci.memo.c().Request(req.Method)
	switch {
	case req.Source == "":
		return refuse(abi.KindInvalidRequest, true, "source_request: source is empty")
	case !methods[req.Method]:
		return refuse(abi.KindInvalidRequest, true, "source_request: unsupported method %q", cut(req.Method))
	case len(req.Path) > abi.MaxPathBytes:
		return refuse(abi.KindInvalidRequest, true, "source_request: path of %d bytes exceeds the limit of %d bytes", len(req.Path), abi.MaxPathBytes)
	case len(req.URL) > abi.MaxPathBytes:
		return refuse(abi.KindInvalidRequest, true, "source_request: url of %d bytes exceeds the limit of %d bytes", len(req.URL), abi.MaxPathBytes)
	case grant.CheckSourcePath(req.Path) != nil:
		return refuse(abi.KindInvalidRequest, true, "%s", p.sourceGrants.Explain(req.Source, req.Method, req.Path))
	}
	var secret *plugin.SecretKeyRef
	if req.Secret != nil {
		if !secretNamePattern().MatchString(req.Secret.Name) || !secretKeyPattern().MatchString(req.Secret.Key) {
			return refuse(abi.KindInvalidRequest, true, "source_request: secret {name %q, key %q} is not a Secret name and data key", cut(req.Secret.Name), cut(req.Secret.Key))
		}
		secret = &plugin.SecretKeyRef{Name: req.Secret.Name, Key: req.Secret.Key}
	}
	header := http.Header{}
	for k, vs := range req.Headers {
		ck := http.CanonicalHeaderKey(k)
		if !validHeader(k, vs) {
			return refuse(abi.KindInvalidRequest, true, "source_request: header %q has a malformed name or value", cut(k))
		}
		// OpenStack's allow-list without Swift's metadata families: a header a plugin sends to
		// a source must have a plain meaning to any HTTP server.
		if !plugin.Forwardable(ck) || strings.HasPrefix(ck, "X-") {
			return refuse(abi.KindInvalidRequest, true, "source_request: header %s is not one a plugin may send to a source (allowed: Accept, Content-Type, If-Match, If-Modified-Since, If-None-Match, If-Unmodified-Since)", ck)
		}
		header[ck] = vs
	}
	if !p.sourceGrants.Allows(req.Source, req.Method, req.Path) {
		why := p.sourceGrants.Explain(req.Source, req.Method, req.Path)
		p.refused("grant")
		if ci.refused++; ci.refused <= maxRefusalLogs {
			ci.log.Warn("source request refused", "entry", ci.entry, "reason", why)
		}
		return refuse(abi.KindGrantDenied, true, "%s", why)
	}
	if ci.session == nil {
		return refuse(abi.KindInvalidRequest, true, "source_request: no session during %s", ci.entry)
	}
	sender, ok := ci.session.(plugin.SourceSender)
	if !ok {
		p.refused("grant")
		return refuse(plugin.SourceDenied, true, "source %q: the operator allow-lists no source for this plugin (%s_SOURCES)", req.Source, p.prefix)
	}
	resp, err := sender.DoSource(ctx, plugin.SourceRequest{Source: req.Source, URL: req.URL, Secret: secret,
		Method: req.Method, Path: req.Path, Query: req.Query, Header: header, Body: req.Body})
	var se *plugin.SourceError
	switch {
	case plugin.IsTooLarge(err):
		p.refused("limit")
		return refuse(abi.KindTooLarge, false, "%s %s %s: %v", req.Method, req.Source, req.Path, err)
	case errors.As(err, &se):
		if se.Kind == plugin.SourceDenied {
			p.refused("grant")
			if ci.refused++; ci.refused <= maxRefusalLogs {
				ci.log.Warn("source request refused", "entry", ci.entry, "reason", se.Error())
			}
		}
		// A source's failure is the CR's, never the credential group's: unlike a refused cloud
		// credential, it is not made the call's permanent session error.
		return refuse(se.Kind, se.Final, "%v", se)
	case err != nil:
		return refuse(plugin.SourceUnreachable, plugin.IsPermanent(err), "%s %s %s: %v", req.Method, req.Source, req.Path, err)
	}
	if len(resp.Body) > plugin.MaxResponseBytes {
		return refuse(abi.KindTooLarge, false, "%s %s %s: response body of %d bytes exceeds the limit of %d bytes",
			req.Method, req.Source, req.Path, len(resp.Body), plugin.MaxResponseBytes)
	}
	return encodeResponse(resp)
}
