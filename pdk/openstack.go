package pdk

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Request is one OpenStack API call. Service and Microversion are filled from the ServiceClient
// when empty.
type Request struct {
	Service string
	Method  string
	// Path is relative to the service endpoint, e.g. "v2.0/network_segment_ranges".
	Path         string
	Query        url.Values
	Header       map[string][]string
	Microversion string
	// Body is marshalled to JSON; a json.RawMessage or []byte is sent as is. nil sends no body.
	Body any
}

// Response is an OpenStack answer of any status.
type Response struct {
	StatusCode int
	Header     map[string][]string
	Body       []byte
}

// DecodeJSON decodes the body into out.
func (r *Response) DecodeJSON(out any) error {
	if err := decodeJSON(r.Body, out, false); err != nil {
		return fmt.Errorf("decoding %d response: %w", r.StatusCode, err)
	}
	return nil
}

// Status codes plugins act on. net/http is deliberately not imported: under wasip1 it links file
// access (mime tables, time zones) that the host's WASI subset refuses.
const (
	StatusBadRequest   = 400
	StatusUnauthorized = 401
	StatusForbidden    = 403
	StatusNotFound     = 404
	StatusConflict     = 409
)

var statusText = map[int]string{
	400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
	406: "Not Acceptable", 409: "Conflict", 413: "Request Entity Too Large", 422: "Unprocessable Entity",
	429: "Too Many Requests", 500: "Internal Server Error", 501: "Not Implemented", 502: "Bad Gateway",
	503: "Service Unavailable", 504: "Gateway Timeout",
}

// HTTPError is a non-2xx answer from OpenStack. Its text holds the method, the path, the status
// with its standard text and the service's own explanation, and nothing that changes from one
// attempt to the next (no request ids, no headers), so a failure that repeats reads the same in a
// CR's status every run.
type HTTPError struct {
	StatusCode int
	Service    string
	Method     string
	Path       string
	// Message is the service's explanation, taken from its error body (ErrorMessage).
	Message string
	// Body is the raw error body.
	Body []byte
}

func (e *HTTPError) Error() string {
	text := fmt.Sprintf("%s %s: HTTP %d", e.Method, e.Path, e.StatusCode)
	if reason := statusText[e.StatusCode]; reason != "" {
		text += " " + reason
	}
	if e.Message != "" {
		text += ": " + e.Message
	}
	return text
}

// NewHTTPError builds the error for a non-2xx answer to method path of service, reading the
// explanation out of body with ErrorMessage.
func NewHTTPError(service, method, path string, status int, body []byte) *HTTPError {
	return &HTTPError{StatusCode: status, Service: service, Method: method, Path: path,
		Message: ErrorMessage(body), Body: body}
}

// StatusCode returns the HTTP status carried by err (an *HTTPError in its chain), or 0.
func StatusCode(err error) int {
	var he *HTTPError
	if errors.As(err, &he) {
		return he.StatusCode
	}
	return 0
}

// IsNotFound reports whether err is an HTTP 404 from OpenStack.
func IsNotFound(err error) bool { return StatusCode(err) == StatusNotFound }

// IsConflict reports whether err is an HTTP 409 from OpenStack.
func IsConflict(err error) bool { return StatusCode(err) == StatusConflict }

// IsRefused reports whether err is an HTTP 401 or 403 from OpenStack: the credentials or the
// service's policy said no, which waiting will not change.
func IsRefused(err error) bool {
	s := StatusCode(err)
	return s == StatusUnauthorized || s == StatusForbidden
}

// ServiceClient sends requests to one OpenStack service.
type ServiceClient struct {
	host         host
	cache        map[string]any
	service      string
	microversion string
}

// Service returns the catalog service type the client talks to.
func (s *ServiceClient) Service() string { return s.service }

// Microversion returns a client that sends v as the service's microversion ("" sends none).
func (s *ServiceClient) Microversion(v string) *ServiceClient {
	c := *s
	c.microversion = v
	return &c
}

// Do sends req. Any HTTP status is returned as a Response; the error is non-nil only when there
// is no response (see HostError).
func (s *ServiceClient) Do(req Request) (*Response, error) {
	if req.Service == "" {
		req.Service = s.service
	}
	if req.Microversion == "" {
		req.Microversion = s.microversion
	}
	req.Method = strings.ToUpper(req.Method)
	return s.host.OpenStack(&req)
}

// Get sends GET path?query and decodes a 2xx JSON body into out (when out is non-nil).
func (s *ServiceClient) Get(path string, query url.Values, out any) error {
	return s.Call("GET", path, query, nil, out)
}

// Head sends HEAD path?query; only the status matters.
func (s *ServiceClient) Head(path string, query url.Values) error {
	return s.Call("HEAD", path, query, nil, nil)
}

// Post sends body as JSON and decodes a 2xx JSON body into out (when out is non-nil).
func (s *ServiceClient) Post(path string, body, out any) error {
	return s.Call("POST", path, nil, body, out)
}

// Put sends body as JSON and decodes a 2xx JSON body into out (when out is non-nil).
func (s *ServiceClient) Put(path string, body, out any) error {
	return s.Call("PUT", path, nil, body, out)
}

// Patch sends body as JSON (e.g. an Ironic JSON patch list) and decodes a 2xx JSON body into out.
func (s *ServiceClient) Patch(path string, body, out any) error {
	return s.Call("PATCH", path, nil, body, out)
}

// Delete sends DELETE path?query and decodes a 2xx JSON body into out (when out is non-nil).
func (s *ServiceClient) Delete(path string, query url.Values, out any) error {
	return s.Call("DELETE", path, query, nil, out)
}

// Call sends one request: path is relative to the service endpoint ("v2.0/flavors"), body (when
// not nil) is sent as JSON and a 2xx answer is decoded into out (when out is not nil). Any other
// status is an *HTTPError; a request the host could not send is its *HostError, wrapped with the
// method and path unless its message names the call already.
func (s *ServiceClient) Call(method, path string, query url.Values, body, out any) error {
	method = strings.ToUpper(method)
	resp, err := s.Do(Request{Method: method, Path: path, Query: query, Body: body})
	if err != nil {
		var he *HostError
		if errors.As(err, &he) && strings.HasPrefix(he.Message, method+" "+s.service+" "+path+":") {
			return err // the host's words already name the call
		}
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return NewHTTPError(s.service, method, path, resp.StatusCode, resp.Body)
	}
	if out == nil || len(resp.Body) == 0 {
		return nil
	}
	if err := decodeJSON(resp.Body, out, false); err != nil {
		return fmt.Errorf("%s %s: unreadable answer: %w", method, path, err)
	}
	return nil
}
