// Package grant is the grant rule: which OpenStack calls (and which requests to sources outside
// OpenStack) a plugin may make. A plugin declares the grants it needs in its metadata; the
// operator may narrow them (never widen them); a call is allowed only when both allow it.
//
// The host enforces it on every request and the PDK applies it in pdktest and in the refusals it
// explains; both import this one implementation, so a plugin that passes pdktest is not refused
// in production and both explain a refusal in the same words (pdk/testdata/grant-rule.json and
// source-rule.json hold the cases). It imports only the standard library, as package abi does.
package grant

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// Grant allows calls to one OpenStack service. A request is allowed when its service equals
// Service, its method is in Methods and its path matches one of Paths.
type Grant struct {
	// Service is the catalog service type, e.g. "network" or "baremetal" (for a source grant,
	// the source's name).
	Service string `json:"service"`
	// Methods are upper-case HTTP methods, e.g. "GET", "POST". "*" allows every method.
	Methods []string `json:"methods"`
	// Paths are patterns relative to the service endpoint, compared segment by segment (Match):
	// "*" matches exactly one segment and a final "**" matches any number of trailing segments
	// (including none). A leading "/" is ignored; the query string is not part of the path.
	// Example: "v2.0/network_segment_ranges", "v2.0/network_segment_ranges/*".
	Paths []string `json:"paths"`
}

var methods = map[string]bool{"GET": true, "HEAD": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true, "*": true}

// Validate reports the first malformed grant in gs.
func Validate(gs []Grant) error {
	for i, g := range gs {
		if g.Service == "" {
			return fmt.Errorf("grant %d: service is empty", i)
		}
		if len(g.Methods) == 0 {
			return fmt.Errorf("grant %d (%s): no methods", i, g.Service)
		}
		for _, m := range g.Methods {
			if !methods[strings.ToUpper(m)] {
				return fmt.Errorf("grant %d (%s): unknown method %q", i, g.Service, m)
			}
		}
		if len(g.Paths) == 0 {
			return fmt.Errorf("grant %d (%s): no paths", i, g.Service)
		}
		for _, p := range g.Paths {
			segs := split(p)
			for j, s := range segs {
				if s == "**" && j != len(segs)-1 {
					return fmt.Errorf("grant %d (%s): path %q: \"**\" may only end a pattern", i, g.Service, p)
				}
				if s == "" || s == "." || s == ".." {
					return fmt.Errorf("grant %d (%s): path %q has an empty, \".\" or \"..\" segment", i, g.Service, p)
				}
			}
		}
	}
	return nil
}

// Parse reads an operator's grant list: a JSON array of {"service", "methods", "paths"}.
// Unknown fields are refused so a misspelt key cannot silently widen nothing into everything.
func Parse(data []byte) ([]Grant, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var gs []Grant
	err := dec.Decode(&gs)
	if err == nil && len(bytes.TrimLeft(data[dec.InputOffset():], " \t\r\n")) > 0 {
		// A Decoder stops after one value; what follows it would otherwise be dropped unread.
		err = json.Unmarshal(data, new(json.RawMessage))
	}
	if err != nil {
		return nil, fmt.Errorf("want a JSON array of {\"service\",\"methods\",\"paths\"}: %w", err)
	}
	if gs == nil {
		return nil, errors.New("want a JSON array of grants, got null")
	}
	if err := Validate(gs); err != nil {
		return nil, err
	}
	return gs, nil
}

// Set is a plugin's effective grant: what it declared, narrowed by the operator.
type Set struct {
	declared []Grant
	operator []Grant
	narrowed bool
	// source marks the grants of sources outside OpenStack (metadata sources): each Grant's
	// Service is a source's name, and a path may end with one slash (CheckSourcePath).
	source bool
}

// NewSet returns the effective grant of declared narrowed by operator; a nil operator list means
// the operator did not narrow anything.
func NewSet(declared, operator []Grant) Set {
	return Set{declared: declared, operator: operator, narrowed: operator != nil}
}

// NewSourceSet returns the grant of the sources outside OpenStack a plugin declares, each Grant
// naming a source in Service. The operator allow-lists sources by URL, not by path.
func NewSourceSet(declared []Grant) Set {
	return Set{declared: declared, source: true}
}

// Allows reports whether a call is inside the effective grant.
func (s Set) Allows(service, method, path string) bool {
	if s.source {
		if CheckSourcePath(path) != nil {
			return false
		}
		path = strings.TrimSuffix(path, "/")
	}
	if !AnyAllows(s.declared, service, method, path) {
		return false
	}
	return !s.narrowed || AnyAllows(s.operator, service, method, path)
}

// Explain says why a refused call was refused, naming the rule that refused it: the unsafe path
// (CheckPath), or the service, method or path pattern the plugin's declared grants, or the
// operator's narrowing, do not allow; "" when the call is allowed. pdktest refuses with these
// words too: pdk/testdata/grant-rule.json holds the cases.
func (s Set) Explain(service, method, path string) string {
	noun := "service"
	if s.source {
		if err := CheckSourcePath(path); err != nil {
			return fmt.Sprintf("%s %s %s: unsafe path: %v", method, service, path, err)
		}
		noun = "source"
	}
	if why := explain(s.declared, "the plugin declares", noun, service, method, path, s.source); why != "" {
		return why
	}
	if s.narrowed {
		return explain(s.operator, "the operator allows", noun, service, method, path, s.source)
	}
	return ""
}

// Explain says why the grants gs refuse method on path of service, as Set.Explain does for a
// plugin's OpenStack grants; whose names the list in the text ("the plugin declares"). "" when gs
// allow the call.
func Explain(gs []Grant, whose, service, method, path string) string {
	return explain(gs, whose, "service", service, method, path, false)
}

func explain(gs []Grant, whose, noun, service, method, path string, source bool) string {
	call := method + " " + service + " " + path
	if source {
		path = strings.TrimSuffix(path, "/")
	}
	if err := CheckPath(path); err != nil {
		return fmt.Sprintf("%s: unsafe path: %v", call, err)
	}
	var patterns, methods []string
	matched := false
	for _, g := range gs {
		if g.Service != service {
			continue
		}
		for _, p := range g.Paths {
			if !Match(p, path) {
				patterns = appendNew(patterns, p)
				continue
			}
			if g.allowsMethod(method) {
				return ""
			}
			matched = true
			for _, m := range g.Methods {
				methods = appendNew(methods, strings.ToUpper(m))
			}
		}
	}
	switch {
	case matched:
		return fmt.Sprintf("%s: method %s is not one %s for this path (%s)", call, method, whose, strings.Join(methods, ", "))
	case len(patterns) > 0:
		return fmt.Sprintf("%s: no path pattern %s for %s %s matches (%s)", call, whose, noun, service, listed(patterns))
	}
	return fmt.Sprintf("%s: no grant %s is for %s %s", call, whose, noun, service)
}

func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// listed joins at most eight patterns, so a refusal stays one readable line.
func listed(patterns []string) string {
	if len(patterns) > 8 {
		return strings.Join(patterns[:8], ", ") + ", ..."
	}
	return strings.Join(patterns, ", ")
}

// AnyAllows reports whether any grant of gs allows the call.
func AnyAllows(gs []Grant, service, method, path string) bool {
	for _, g := range gs {
		if g.Allows(service, method, path) {
			return true
		}
	}
	return false
}

// Allows reports whether g permits method on path of service: the service is equal, the method
// is one of Methods (case-insensitive, "*" for any) and the path is safe (CheckPath) and matches
// one of Paths (Match).
func (g Grant) Allows(service, method, path string) bool {
	return g.Service == service && g.allowsMethod(method) && slices.ContainsFunc(g.Paths, func(p string) bool {
		return Match(p, path)
	})
}

func (g Grant) allowsMethod(method string) bool {
	return slices.ContainsFunc(g.Methods, func(m string) bool { return m == "*" || strings.EqualFold(m, method) })
}

// Match reports whether path matches pattern, segment by segment: "*" matches one segment and a
// final "**" any number of trailing segments (none included). Slashes around the pattern are
// ignored, and one leading slash of the path. A path CheckPath refuses never matches.
func Match(pattern, path string) bool {
	if CheckPath(path) != nil {
		return false
	}
	ps, xs := split(pattern), pathSegments(path)
	for i, p := range ps {
		if p == "**" && i == len(ps)-1 {
			return true
		}
		if i >= len(xs) || (p != "*" && p != xs[i]) {
			return false
		}
	}
	return len(ps) == len(xs)
}

// CheckPath reports why the host will not send path, or nil. A path is relative to the service
// endpoint: "" or "/" is the endpoint itself; otherwise one optional leading slash, then segments
// separated by single slashes. Refused: an empty segment (a doubled, leading "//" or trailing
// slash, so no URL either); a query or fragment; a space, control character or backslash; a
// segment that is not validly percent-escaped, or that decodes to "." or "..", or to anything
// holding a slash or backslash. Servers and proxies decode and normalise paths, so "%2e%2e" or
// "a%2Fb" inside a "*" would otherwise reach a resource the grant does not name.
func CheckPath(path string) error {
	p := strings.TrimPrefix(path, "/")
	if p == "" {
		return nil
	}
	if strings.ContainsAny(p, "?#") {
		return fmt.Errorf("a query or fragment does not belong in the path; send the query in Request.Query")
	}
	if strings.ContainsFunc(p, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '\\' }) {
		return fmt.Errorf("the path holds a space, control character or backslash; escape each segment with url.PathEscape")
	}
	for seg := range strings.SplitSeq(p, "/") {
		if seg == "" {
			return fmt.Errorf("the path has an empty segment (a doubled, leading or trailing slash)")
		}
		dec, err := url.PathUnescape(seg)
		switch {
		case err != nil:
			return fmt.Errorf("segment %q is not validly percent-escaped", seg)
		case dec == "." || dec == "..":
			return fmt.Errorf("segment %q is %q once decoded, which would leave the resource the grant names", seg, dec)
		case strings.ContainsAny(dec, `/\`):
			return fmt.Errorf("segment %q holds an encoded slash or backslash, which a server may decode into a separator", seg)
		}
	}
	return nil
}

// CheckSourcePath is CheckPath for a source outside OpenStack, whose path may end with one
// slash: Django REST APIs such as Nautobot's answer "api/ipam/prefixes" with a redirect to
// "api/ipam/prefixes/", and the host follows no redirect. The slash is sent as written; grants
// match the path without it.
func CheckSourcePath(path string) error {
	trimmed := strings.TrimSuffix(path, "/")
	if path != "/" && strings.HasSuffix(trimmed, "/") {
		return fmt.Errorf("the path has an empty segment (a doubled, leading or trailing slash)")
	}
	return CheckPath(trimmed)
}

func split(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// pathSegments splits a path CheckPath accepted.
func pathSegments(p string) []string {
	p = strings.TrimPrefix(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}
