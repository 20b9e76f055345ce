// Package kubeapi holds the plain values the framework exchanges with the Kubernetes API: where a
// custom resource is (Target) and how the API server refused a request (APIError). It imports
// nothing of client-go or apimachinery, so the framework packages (runner, finalizer, hook) do
// not either; package kube, the client-go client, produces these values.
package kubeapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Target addresses one namespaced custom resource.
type Target struct {
	Group, Version, Plural, Namespace, Name string
}

// APIError is a request the API server answered with an error status.
type APIError struct {
	Code int
	// Body is the response body, or client-go's description of it when it was not JSON.
	Body string
	// Err is the client's own error, kept in the chain for callers that know the client.
	Err error
}

// maxBody bounds the body quoted in an error message.
const maxBody = 512

func (e *APIError) Error() string {
	msg := strings.TrimSpace(fmt.Sprintf("HTTP %d %s", e.Code, http.StatusText(e.Code)))
	body := strings.Join(strings.Fields(strings.ToValidUTF8(e.Body, "\uFFFD")), " ")
	if len(body) > maxBody {
		// Dropping the bytes of a character cut in half keeps the log line valid UTF-8.
		body = strings.ToValidUTF8(body[:maxBody-3], "") + "..."
	}
	if body != "" {
		msg += ": " + body
	}
	return msg
}

func (e *APIError) Unwrap() error { return e.Err }

// DetailsName is details.name of a JSON Status body, "" for any other body.
func (e *APIError) DetailsName() string {
	var st struct {
		Kind    string `json:"kind"`
		Details *struct {
			Name string `json:"name"`
		} `json:"details"`
	}
	if json.Unmarshal([]byte(e.Body), &st) != nil || st.Kind != "Status" || st.Details == nil {
		return ""
	}
	return st.Details.Name
}

// ObjectGone reports a 404 about the named object itself, not a missing route or CRD (whose 404
// names nothing, or something else).
func (e *APIError) ObjectGone(name string) bool {
	return e.Code == http.StatusNotFound && name != "" && e.DetailsName() == name
}

// AsAPIError returns err's APIError, if it has one.
func AsAPIError(err error) (*APIError, bool) {
	var ae *APIError
	ok := errors.As(err, &ae)
	return ae, ok
}

// IsNotFound reports whether err is the API server answering 404 (for a Secret lookup: the Secret,
// or its namespace, does not exist).
func IsNotFound(err error) bool {
	ae, ok := AsAPIError(err)
	return ok && ae.Code == http.StatusNotFound
}

// Event is one Kubernetes Event (events.k8s.io/v1) about a CR.
type Event struct {
	Regarding ObjectRef
	// Type is Normal or Warning.
	Type string
	// Reason is a CamelCase word an operator can filter on; Action is what the host was doing.
	Reason, Action string
	Note           string
}

// ObjectRef is the object an Event is about.
type ObjectRef struct {
	APIVersion, Kind, Namespace, Name, UID string
}

// Event types.
const (
	EventNormal  = "Normal"
	EventWarning = "Warning"
)
