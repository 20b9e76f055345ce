// Package grant decides which OpenStack calls a plugin may make. A plugin declares the grants it
// needs in its metadata; the operator may narrow them (never widen them); a call is allowed only
// when both allow it.
package grant

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Grant allows calls to one OpenStack service: a method in Methods on a path matching one of Paths.
type Grant struct {
	Service string   `json:"service"`
	Methods []string `json:"methods"`
	Paths   []string `json:"paths"`
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
	if err := dec.Decode(&gs); err != nil {
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
}

// NewSet returns the effective grant of declared narrowed by operator; a nil operator list means
// the operator did not narrow anything.
func NewSet(declared, operator []Grant) Set {
	return Set{declared: declared, operator: operator, narrowed: operator != nil}
}

// Allows reports whether a call is inside the effective grant.
func (s Set) Allows(service, method, path string) bool {
	if !anyAllows(s.declared, service, method, path) {
		return false
	}
	return !s.narrowed || anyAllows(s.operator, service, method, path)
}

// Explain says why a refused call was refused, for the plugin's error and the host's log.
func (s Set) Explain(service, method, path string) string {
	if !anyAllows(s.declared, service, method, path) {
		return fmt.Sprintf("%s %s %s is outside the grants the plugin declares", method, service, path)
	}
	return fmt.Sprintf("%s %s %s is outside the grants the operator allows", method, service, path)
}

func anyAllows(gs []Grant, service, method, path string) bool {
	for _, g := range gs {
		if g.allows(service, method, path) {
			return true
		}
	}
	return false
}

func (g Grant) allows(service, method, path string) bool {
	if g.Service != service {
		return false
	}
	ok := false
	for _, m := range g.Methods {
		if m == "*" || strings.EqualFold(m, method) {
			ok = true
			break
		}
	}
	if !ok {
		return false
	}
	for _, p := range g.Paths {
		if Match(p, path) {
			return true
		}
	}
	return false
}

// Match reports whether path matches pattern, segment by segment: "*" matches one non-empty
// segment and a final "**" any number of trailing segments. Leading and trailing slashes are
// ignored. A path never matches when a segment is empty, ".", "..", holds a query or fragment,
// or would be one of those or hold a slash or backslash once percent-decoded: servers and
// proxies decode and normalise paths, so "%2e%2e" or "a%2Fb" inside a "*" would otherwise
// reach a resource the grant does not name.
func Match(pattern, path string) bool {
	ps, xs := split(pattern), split(path)
	for _, x := range xs {
		if !safeSegment(x) {
			return false
		}
	}
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

func safeSegment(x string) bool {
	if strings.ContainsAny(x, "?#\\") {
		return false
	}
	dec, err := url.PathUnescape(x)
	if err != nil {
		return false
	}
	return dec != "" && dec != "." && dec != ".." && !strings.ContainsAny(dec, "/\\")
}

func split(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}
