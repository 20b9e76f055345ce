package pdk

import "strings"

// Allows reports whether the grant permits method on path of service (the host applies the same
// rule; pdktest uses this one).
func (g Grant) Allows(service, method, path string) bool {
	if g.Service != service {
		return false
	}
	methodOK := false
	for _, m := range g.Methods {
		if m == "*" || strings.EqualFold(m, method) {
			methodOK = true
			break
		}
	}
	if !methodOK {
		return false
	}
	for _, p := range g.Paths {
		if PathMatches(p, path) {
			return true
		}
	}
	return false
}

// PathMatches reports whether path matches pattern: segment by segment, "*" matches exactly one
// non-empty segment and a final "**" matches any number of trailing segments. Leading and
// trailing slashes are ignored; a path with "." or ".." segments never matches.
func PathMatches(pattern, path string) bool {
	ps := splitPath(pattern)
	xs := splitPath(path)
	for _, x := range xs {
		if x == "." || x == ".." || x == "" {
			return false
		}
	}
	for i, p := range ps {
		if p == "**" && i == len(ps)-1 {
			return true
		}
		if i >= len(xs) {
			return false
		}
		if p != "*" && p != xs[i] {
			return false
		}
	}
	return len(ps) == len(xs)
}

func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}
