package abi

import (
	"encoding/json"
	"net/url"
)

// Envelope is the part every host→guest input carries.
type Envelope struct {
	ABIVersion int `json:"abi_version"`
}

// The JSON messages that cross the boundary in both directions, as both sides read and write
// them.

// Error is what a failing entry point passes to error_set.
type Error struct {
	Message   string `json:"message"`
	Reason    string `json:"reason,omitempty"`
	Permanent bool   `json:"permanent,omitempty"`
}

// OpenStackRequest is the input of the openstack_request host function.
type OpenStackRequest struct {
	Service      string              `json:"service"`
	Method       string              `json:"method"`
	Path         string              `json:"path"`
	Query        url.Values          `json:"query,omitempty"`
	Headers      map[string][]string `json:"headers,omitempty"`
	Microversion string              `json:"microversion,omitempty"`
	Body         json.RawMessage     `json:"body,omitempty"`
}

// SourceRequest is the input of the source_request host function.
type SourceRequest struct {
	Source  string              `json:"source"`
	URL     string              `json:"url"`
	Secret  *SecretKeyRef       `json:"secret,omitempty"`
	Method  string              `json:"method"`
	Path    string              `json:"path"`
	Query   url.Values          `json:"query,omitempty"`
	Headers map[string][]string `json:"headers,omitempty"`
	Body    json.RawMessage     `json:"body,omitempty"`
}

// SecretKeyRef names the key of a Secret that holds a source's credential.
type SecretKeyRef struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}

// OpenStackResponse is the JSON head of the openstack_request (and source_request) output: either a response of any
// HTTP status (whose body follows the head and a newline, as is) or an Error when there is none.
type OpenStackResponse struct {
	Status  int                 `json:"status,omitempty"`
	Headers map[string][]string `json:"headers,omitempty"`
	Error   *HostError          `json:"error,omitempty"`
}

// HostError says why the host produced no response; Kind is one of the Kind constants.
type HostError struct {
	Kind      string `json:"kind"`
	Message   string `json:"message"`
	Permanent bool   `json:"permanent,omitempty"`
}
