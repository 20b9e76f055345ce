package plugin

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// MaxResponseBytes bounds one OpenStack response body: the session stops reading one byte past it
// and the plugin gets a too_large error. One definition for every layer (the session, the wasm
// host function, docs/abi.md).
const MaxResponseBytes = 8 << 20

// TooLargeError is a response body over its limit. It reaches a wasm plugin as kind "too_large",
// so the plugin can tell it from a session failure (ask for less: a filter, a smaller page).
type TooLargeError struct {
	Op    string
	Size  int64 // bytes read, at least Limit+1 when the body was cut short
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s: the response body is larger than the %d-byte limit", e.Op, e.Limit)
}

// IsTooLarge reports whether err is, or wraps, a TooLargeError.
func IsTooLarge(err error) bool {
	var tl *TooLargeError
	return errors.As(err, &tl)
}

// forwardedHeaders are the request headers a plugin may send, in canonical form. An allow-list,
// not a deny-list: a header that routes, authenticates, frames or overrides the method
// (X-Original-URL, X-Forwarded-Host, Forwarded, X-HTTP-Method-Override, ...) is one the host
// cannot know every server's reading of, so only headers with a plain meaning to OpenStack APIs
// pass. Credentials are the host's; microversions go through Request.Microversion.
var forwardedHeaders = []string{
	"Accept", "Content-Type", "If-Match", "If-Modified-Since", "If-None-Match", "If-Unmodified-Since",
}

// forwardedPrefixes are header families an API defines for its own metadata (Swift objects,
// containers and accounts).
var forwardedPrefixes = []string{"X-Object-Meta-", "X-Container-Meta-", "X-Account-Meta-"}

// Forwardable reports whether a plugin may send the request header with this canonical name.
func Forwardable(canonical string) bool {
	if slices.Contains(forwardedHeaders, canonical) {
		return true
	}
	for _, p := range forwardedPrefixes {
		if strings.HasPrefix(canonical, p) && len(canonical) > len(p) {
			return true
		}
	}
	return false
}

// ForwardableHeaders names what Forwardable allows, for error messages and docs.
func ForwardableHeaders() string {
	return strings.Join(forwardedHeaders, ", ") + " and " + strings.Join(forwardedPrefixes, "*, ") + "*"
}

// CredentialHeaders never reach a plugin in a response, whatever the server sends.
var CredentialHeaders = []string{"X-Subject-Token", "X-Auth-Token", "X-Service-Token", "Set-Cookie", "Authorization"}
