package pdk

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/openstack-sync/openstack-sync/pdk/abi"
	"github.com/openstack-sync/openstack-sync/pdk/abi/grant"
)

// SourceRequest is one request to a source outside OpenStack (Context.Source). Source, URL and
// Secret are filled from the SourceClient when empty.
type SourceRequest struct {
	Source string
	// URL is the source's base URL as the CR names it; the host sends the request only when it
	// is one the operator allow-lists for the source.
	URL string
	// Secret names the Secret key holding the credential; nil sends none.
	Secret *SecretKeyRef
	Method string
	// Path is relative to URL, e.g. "api/ipam/prefixes/" (one trailing slash is allowed).
	Path   string
	Query  url.Values
	Header map[string][]string
	// Body is marshalled to JSON; a json.RawMessage or []byte is sent as is. nil sends no body.
	Body any
}

// SecretKeyRef names one key of a Secret in the CR's namespace (the credential group's). The
// plugin names it; the host reads it and sends it, and the plugin never sees its value.
type SecretKeyRef struct {
	Name string
	Key  string
}

// sourceHost is the host side of source requests. A host without it (an older Backend of
// pdktest's, a third party's fake) refuses every source request as not allow-listed.
type sourceHost interface {
	Source(req *SourceRequest) (*Response, error)
}

// SourceClient sends requests to one source outside OpenStack at the base URL a CR names.
type SourceClient struct {
	host   host
	source string
	url    string
	secret *SecretKeyRef
}

// Source returns a client for the source name (declared in Metadata.Sources) at baseURL, the
// URL the CR names. The host sends a request only when the operator allow-lists that URL for the
// source; otherwise it is a permanent *HostError of kind "source_denied", whose message says
// which URLs are allowed: report it against the CR field that named the URL.
func (c *Context) Source(name, baseURL string) *SourceClient {
	return &SourceClient{host: c.host, source: name, url: baseURL}
}

// WithSecret returns a client whose requests carry the credential held in key of the Secret
// name, in the CR's namespace; the host sends it in the header the operator configured for the
// source (Nautobot: "Authorization: Token <key>") and removes it from every answer.
func (s *SourceClient) WithSecret(name, key string) *SourceClient {
	c := *s
	c.secret = &SecretKeyRef{Name: name, Key: key}
	return &c
}

// Name returns the source's name.
func (s *SourceClient) Name() string { return s.source }

// Do sends req. Any HTTP status is returned as a Response; the error is non-nil only when there
// is no response (a *HostError).
func (s *SourceClient) Do(req SourceRequest) (*Response, error) {
	if req.Source == "" {
		req.Source = s.source
	}
	if req.URL == "" {
		req.URL = s.url
	}
	if req.Secret == nil {
		req.Secret = s.secret
	}
	req.Method = strings.ToUpper(req.Method)
	h, ok := s.host.(sourceHost)
	if !ok {
		return nil, &HostError{Kind: "source_denied", IsPermanent: true,
			Message: fmt.Sprintf("source %q: this host serves no source outside OpenStack", req.Source)}
	}
	return h.Source(&req)
}

// Get sends GET path?query and decodes a 2xx JSON body into out (when out is non-nil).
func (s *SourceClient) Get(path string, query url.Values, out any) error {
	return s.Call("GET", path, query, nil, out)
}

// Call sends one request and decodes a 2xx JSON answer into out (when out is not nil). Any other
// status is an *HTTPError whose Service is the source's name; a request the host could not send
// is its *HostError, wrapped with the method and path unless its message names the call already.
func (s *SourceClient) Call(method, path string, query url.Values, body, out any) error {
	method = strings.ToUpper(method)
	resp, err := s.Do(SourceRequest{Method: method, Path: path, Query: query, Body: body})
	if err != nil {
		var he *HostError
		if errors.As(err, &he) && (strings.HasPrefix(he.Message, method+" "+s.source+" ") || strings.HasPrefix(he.Message, "source ") ||
			strings.HasPrefix(he.Message, "Secret ")) {
			return err // the host's words already name the call, the source or the Secret
		}
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return NewHTTPError(s.source, method, path, resp.StatusCode, resp.Body)
	}
	if out == nil || len(resp.Body) == 0 {
		return nil
	}
	if err := decodeJSON(resp.Body, out, false); err != nil {
		return fmt.Errorf("%s %s: unreadable answer: %w", method, path, err)
	}
	return nil
}

// isSourceName is the host's rule for a source's name (abi.CheckSourceName).
func isSourceName(s string) bool { return abi.CheckSourceName(s) == nil }

// CheckSourcePath is CheckPath for a source (grant.CheckSourcePath): the path may end with one
// slash, which Django REST APIs such as Nautobot's need; grants match the path without it.
func CheckSourcePath(path string) error { return grant.CheckSourcePath(path) }

// ExplainSourceRefusal says why the declared sources refuse method on path of source, in the
// host's words (pdk/testdata/source-rule.json); "" when they allow it.
func ExplainSourceRefusal(sources []SourceGrant, source, method, path string) string {
	gs := make([]Grant, len(sources))
	for i, s := range sources {
		gs[i] = Grant{Service: s.Name, Methods: s.Methods, Paths: s.Paths}
	}
	return grant.NewSourceSet(gs).Explain(source, method, path)
}
