package pdktest

import (
	"bytes"
	"fmt"
	"net/url"
	"strings"

	"github.com/openstack-sync/openstack-sync/pdk"
)

// Source plays one source outside OpenStack that the operator allow-lists for the plugin
// (<PREFIX>_SOURCES): its name and base URL, the credentials the CR's namespace holds, and the
// server behind it.
type Source struct {
	Name string
	// URL is the base URL the operator lists; a request naming another URL is refused.
	URL string
	// Secrets are the credentials the host could read, by "secret-name/key".
	Secrets map[string]string
	// Server answers every request the host lets through, with a status and a body encoded as
	// JSON (nil for none; []byte and json.RawMessage sent as is). The call carries the
	// credential as the host sends it: Header["Authorization"] is "Token <value>".
	Server func(c SourceCall) (status int, body any)
}

// SourceCall is one request to a source as its server sees it.
type SourceCall struct {
	Source string
	Method string
	Path   string
	Query  url.Values
	Header map[string][]string
	Body   []byte
}

// String renders "METHOD path?query".
func (c SourceCall) String() string {
	if len(c.Query) == 0 {
		return c.Method + " " + c.Path
	}
	return c.Method + " " + c.Path + "?" + c.Query.Encode()
}

// SourceCalls returns every request that reached a source's server, in order.
func (h *Host) SourceCalls() []SourceCall {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]SourceCall(nil), h.sources...)
}

// Source implements the host side of Context.Source with the host's rules and words: the
// registered plugin's declared sources, the operator's allow-listed URL, the credential's Secret
// key, and an answer from which the credential is scrubbed.
func (h *Host) Source(req *pdk.SourceRequest) (*pdk.Response, error) {
	h.t.Helper()
	refuse := func(kind string, format string, args ...any) (*pdk.Response, error) {
		return nil, &pdk.HostError{Kind: kind, IsPermanent: true, Message: fmt.Sprintf(format, args...)}
	}
	if err := pdk.CheckSourcePath(req.Path); err != nil {
		return refuse("invalid_request", "%s %s %s: unsafe path: %v", req.Method, req.Source, req.Path, err)
	}
	if !h.opts.AllowAll {
		var declared []pdk.SourceGrant
		if p := pdk.Registered(); p != nil {
			declared = p.Metadata.Sources
		}
		if why := pdk.ExplainSourceRefusal(declared, req.Source, req.Method, req.Path); why != "" {
			return refuse("grant_denied", "%s", why)
		}
	}
	var allowed []string
	var src *Source
	for i := range h.opts.Sources {
		s := &h.opts.Sources[i]
		if s.Name != req.Source {
			continue
		}
		if sameURL(s.URL, req.URL) {
			src = s
			break
		}
		allowed = append(allowed, strings.TrimRight(s.URL, "/"))
	}
	switch {
	case src == nil && len(allowed) == 0:
		return refuse("source_denied", "source %q: the operator allow-lists no source of that name for this plugin", req.Source)
	case src == nil:
		return refuse("source_denied", "source %q: %s is not an allow-listed URL of this source (allowed: %s)",
			req.Source, strings.TrimRight(req.URL, "/"), strings.Join(allowed, ", "))
	}
	call := SourceCall{Source: req.Source, Method: req.Method, Path: req.Path, Query: req.Query, Header: map[string][]string{}}
	for k, v := range req.Header {
		call.Header[k] = v
	}
	credential := ""
	if req.Secret != nil {
		v, ok := src.Secrets[req.Secret.Name+"/"+req.Secret.Key]
		switch {
		case !ok:
			return refuse("secret", "Secret %s has no key %q, or does not exist", req.Secret.Name, req.Secret.Key)
		case strings.TrimSpace(v) == "":
			return refuse("secret", "Secret %s key %q is empty", req.Secret.Name, req.Secret.Key)
		}
		credential = strings.TrimSpace(v)
		call.Header["Authorization"] = []string{"Token " + credential}
	}
	if req.Body != nil {
		b, err := bodyBytes(req.Body)
		if err != nil {
			return nil, err
		}
		call.Body = b
	}
	h.mu.Lock()
	h.sources = append(h.sources, call)
	h.mu.Unlock()
	if src.Server == nil {
		h.t.Errorf("pdktest: source %s has no Server for %s", src.Name, call)
		return refuse("source", "pdktest: source %s has no server", src.Name)
	}
	status, body := src.Server(call)
	resp := JSON(status, body)
	if credential != "" {
		resp.Body = bytes.ReplaceAll(resp.Body, []byte(credential), []byte("[redacted]"))
	}
	return resp, nil
}

// sameURL compares base URLs as the host does, closely enough for tests: scheme and host in any
// case, a trailing slash ignored.
func sameURL(a, b string) bool {
	ua, err1 := url.Parse(strings.TrimRight(a, "/"))
	ub, err2 := url.Parse(strings.TrimRight(b, "/"))
	return err1 == nil && err2 == nil && strings.EqualFold(ua.Scheme, ub.Scheme) && strings.EqualFold(ua.Host, ub.Host) &&
		ua.EscapedPath() == ub.EscapedPath() && ub.RawQuery == "" && ub.Fragment == "" && ub.User == nil
}
