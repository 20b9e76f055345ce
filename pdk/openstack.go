package pdk

import (
	"encoding/json"
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
	if err := json.Unmarshal(r.Body, out); err != nil {
		return fmt.Errorf("decoding %d response: %w", r.StatusCode, err)
	}
	return nil
}

// HTTPError is a non-2xx answer from OpenStack.
type HTTPError struct {
	StatusCode int
	Service    string
	Method     string
	Path       string
	// Message is the error text OpenStack returned (NeutronError, Ironic faultstring, ...), or
	// a short excerpt of the body.
	Message string
	Body    []byte
}

func (e *HTTPError) Error() string {
	s := fmt.Sprintf("%s %s %s: HTTP %d", e.Method, e.Service, e.Path, e.StatusCode)
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
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
func IsNotFound(err error) bool { return StatusCode(err) == 404 }

// IsConflict reports whether err is an HTTP 409 from OpenStack.
func IsConflict(err error) bool { return StatusCode(err) == 409 }

// ServiceClient sends requests to one OpenStack service.
type ServiceClient struct {
	host         Host
	service      string
	microversion string
}

// Microversion returns a client that sends v as the service's microversion.
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
	return s.call("GET", path, query, nil, out)
}

// Post sends body as JSON and decodes a 2xx JSON body into out (when out is non-nil).
func (s *ServiceClient) Post(path string, body, out any) error {
	return s.call("POST", path, nil, body, out)
}

// Put sends body as JSON and decodes a 2xx JSON body into out (when out is non-nil).
func (s *ServiceClient) Put(path string, body, out any) error {
	return s.call("PUT", path, nil, body, out)
}

// Patch sends body as JSON (e.g. an Ironic JSON patch list) and decodes a 2xx JSON body into out.
func (s *ServiceClient) Patch(path string, body, out any) error {
	return s.call("PATCH", path, nil, body, out)
}

// Delete sends DELETE path?query and decodes a 2xx JSON body into out (when out is non-nil).
func (s *ServiceClient) Delete(path string, query url.Values, out any) error {
	return s.call("DELETE", path, query, nil, out)
}

func (s *ServiceClient) call(method, path string, query url.Values, body, out any) error {
	resp, err := s.Do(Request{Method: method, Path: path, Query: query, Body: body})
	if err != nil {
		return err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return &HTTPError{StatusCode: resp.StatusCode, Service: s.service, Method: method, Path: path,
			Message: errorMessage(resp.Body), Body: resp.Body}
	}
	if out == nil || len(resp.Body) == 0 {
		return nil
	}
	if err := json.Unmarshal(resp.Body, out); err != nil {
		return fmt.Errorf("%s %s %s: decoding response: %w", method, s.service, path, err)
	}
	return nil
}

// errorMessage pulls the human message out of the error bodies OpenStack services return, so an
// HTTPError reads well in a CR's status and stays stable between runs.
func errorMessage(body []byte) string {
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) == nil {
		// Neutron: {"NeutronError": {"type", "message", "detail"}}; Keystone/Nova: {"error": {"message"}}
		for _, k := range []string{"NeutronError", "error", "badRequest", "itemNotFound", "conflictingRequest", "forbidden"} {
			var inner struct {
				Message string `json:"message"`
			}
			if raw, ok := fields[k]; ok && json.Unmarshal(raw, &inner) == nil && inner.Message != "" {
				return inner.Message
			}
		}
		// Ironic: {"error_message": "{\"faultstring\": ...}"}
		if raw, ok := fields["error_message"]; ok {
			var s string
			if json.Unmarshal(raw, &s) == nil {
				var fault struct {
					Faultstring string `json:"faultstring"`
				}
				if json.Unmarshal([]byte(s), &fault) == nil && fault.Faultstring != "" {
					return fault.Faultstring
				}
				return s
			}
		}
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}
