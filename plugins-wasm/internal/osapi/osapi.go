// Package osapi is the narrow view of an OpenStack service that the plugins' logic is written
// against. The wasm build satisfies it with the PDK's service client; unit tests satisfy it with
// in-memory clouds. Keeping the logic behind this seam lets it run under plain `go test`.
package osapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Service is one OpenStack service endpoint (network, baremetal, identity) for one credential
// group, with its microversion already chosen.
type Service interface {
	// Call sends one request. path is relative to the service endpoint ("v2.0/flavors"); body, when
	// not nil, is sent as JSON; a 2xx answer is decoded into out when out is not nil. Any other
	// status is returned as an *HTTPError.
	Call(method, path string, query url.Values, body, out any) error
}

// HTTPError is a non-2xx answer from OpenStack. Its text holds no request ids or headers, so a
// failure that repeats reads the same every run (spec Decision 8).
type HTTPError struct {
	Method     string
	Path       string
	StatusCode int
	// Message is the service's own explanation, taken from the error body.
	Message string
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

// NewHTTPError builds the error for a non-2xx response, pulling the human message out of the
// body shapes Neutron, Ironic and Keystone use.
func NewHTTPError(method, path string, status int, body []byte) *HTTPError {
	return &HTTPError{Method: method, Path: path, StatusCode: status, Message: ErrorMessage(body)}
}

// StatusCode returns the HTTP status carried by err, or 0 when err is not an HTTP answer.
func StatusCode(err error) int {
	var he *HTTPError
	if errors.As(err, &he) {
		return he.StatusCode
	}
	return 0
}

// Status codes the plugins act on. net/http is deliberately not imported: under wasip1 it links
// file access (mime tables, time zones) that the host's WASI subset refuses.
const (
	StatusUnauthorized = 401
	StatusForbidden    = 403
	StatusNotFound     = 404
	StatusConflict     = 409
)

var statusText = map[int]string{
	400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
	406: "Not Acceptable", 409: "Conflict", 413: "Request Entity Too Large", 429: "Too Many Requests",
	500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout",
}

// IsNotFound reports a 404 answer.
func IsNotFound(err error) bool { return StatusCode(err) == StatusNotFound }

// IsConflict reports a 409 answer.
func IsConflict(err error) bool { return StatusCode(err) == StatusConflict }

// IsRefused reports a 401 or 403 answer: the credentials or the policy, which waiting will not fix.
func IsRefused(err error) bool {
	s := StatusCode(err)
	return s == StatusUnauthorized || s == StatusForbidden
}

const maxMessage = 512

// ErrorMessage extracts the explanation from an OpenStack error body:
// Neutron {"NeutronError": {"message"}}, Ironic {"error_message": "<json with faultstring>"},
// Keystone {"error": {"message"}}; anything else is the trimmed body text.
func ErrorMessage(body []byte) string {
	var shapes struct {
		NeutronError *struct {
			Message string `json:"message"`
		} `json:"NeutronError"`
		ErrorMessage json.RawMessage `json:"error_message"`
		Error        *struct {
			Message string `json:"message"`
		} `json:"error"`
		Message     string `json:"message"`
		Faultstring string `json:"faultstring"`
	}
	msg := ""
	if json.Unmarshal(body, &shapes) == nil {
		switch {
		case shapes.NeutronError != nil:
			msg = shapes.NeutronError.Message
		case len(shapes.ErrorMessage) > 0:
			msg = ironicFault(shapes.ErrorMessage)
		case shapes.Error != nil:
			msg = shapes.Error.Message
		case shapes.Faultstring != "":
			msg = shapes.Faultstring
		default:
			msg = shapes.Message
		}
	} else {
		msg = string(body)
	}
	msg = strings.Join(strings.Fields(msg), " ")
	if len(msg) > maxMessage {
		msg = msg[:maxMessage-3] + "..."
	}
	return msg
}

// ironicFault reads Ironic's error_message, which is either an object or a JSON string holding
// one, and returns its faultstring.
func ironicFault(raw json.RawMessage) string {
	var fault struct {
		Faultstring string `json:"faultstring"`
	}
	if json.Unmarshal(raw, &fault) == nil && fault.Faultstring != "" {
		return fault.Faultstring
	}
	var inner string
	if json.Unmarshal(raw, &inner) == nil {
		if json.Unmarshal([]byte(inner), &fault) == nil && fault.Faultstring != "" {
			return fault.Faultstring
		}
		return inner
	}
	return string(raw)
}
