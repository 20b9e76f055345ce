package pdk

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// The grant rule below is the host's, word for word (host/internal/wasm/grant): one table of
// cases, pdk/testdata/grant-rule.json, is run by the tests of both, so a plugin that passes
// pdktest is not refused in production, and both explain a refusal in the same words.

// Allows reports whether the grant permits method on path of service: the service is equal, the
// method is one of Methods (case-insensitive, "*" for any) and the path is safe (CheckPath) and
// matches one of Paths (PathMatches).
func (g Grant) Allows(service, method, path string) bool {
	return g.Service == service && g.allowsMethod(method) && slices.ContainsFunc(g.Paths, func(p string) bool {
		return PathMatches(p, path)
	})
}

func (g Grant) allowsMethod(method string) bool {
	return slices.ContainsFunc(g.Methods, func(m string) bool { return m == "*" || strings.EqualFold(m, method) })
}

// PathMatches reports whether path matches pattern: segment by segment, "*" matches exactly one
// segment and a final "**" any number of trailing segments (none included). Slashes around the
// pattern are ignored, and one leading slash of the path. A path that CheckPath refuses never
// matches.
func PathMatches(pattern, path string) bool {
	if CheckPath(path) != nil {
		return false
	}
	ps, xs := splitPattern(pattern), pathSegments(path)
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
// slash); a query or fragment (send the query in Request.Query); a space, control character or
// backslash; a segment that is not validly percent-escaped, or that decodes to "." or "..", or to
// anything holding a slash or backslash. Servers and proxies decode and normalise paths, so
// "%2e%2e" or "a%2Fb" inside a "*" would otherwise reach a resource the grant does not name.
// Escape each segment with url.PathEscape.
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

// ExplainRefusal says why grants refuse method on path of service, naming the rule that refused:
// the unsafe path, the service, the method or the path pattern; "" when the grants allow the
// call. whose names the grant list in the text ("the plugin declares").
func ExplainRefusal(grants []Grant, whose, service, method, path string) string {
	call := method + " " + service + " " + path
	if err := CheckPath(path); err != nil {
		return fmt.Sprintf("%s: unsafe path: %v", call, err)
	}
	var patterns, methods []string
	matched := false
	for _, g := range grants {
		if g.Service != service {
			continue
		}
		for _, p := range g.Paths {
			if !PathMatches(p, path) {
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
		return fmt.Sprintf("%s: no path pattern %s for service %s matches (%s)", call, whose, service, listed(patterns))
	}
	return fmt.Sprintf("%s: no grant %s is for service %s", call, whose, service)
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

func splitPattern(p string) []string {
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
