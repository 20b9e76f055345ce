package pdk

import "github.com/openstack-sync/openstack-sync/pdk/abi/grant"

// The grant rule is package grant's (pdk/abi/grant), which the host imports too: a plugin that
// passes pdktest is not refused in production, and both explain a refusal in the same words. The
// names below keep the PDK's API as it was before the rule moved there.

// Grant allows calls to one OpenStack service (grant.Grant): a request is allowed when its
// service equals Service, its method is in Methods and its path matches one of Paths.
type Grant = grant.Grant

// PathMatches reports whether path matches pattern (grant.Match): segment by segment, "*"
// matches exactly one segment and a final "**" any number of trailing segments (none included).
// A path that CheckPath refuses never matches.
func PathMatches(pattern, path string) bool { return grant.Match(pattern, path) }

// CheckPath reports why the host will not send path, or nil (grant.CheckPath): an empty segment,
// a query or fragment (send the query in Request.Query), a space, control character or backslash,
// or a segment that is not validly percent-escaped or decodes to ".", ".." or a slash. Escape each
// segment with url.PathEscape.
func CheckPath(path string) error { return grant.CheckPath(path) }

// ExplainRefusal says why grants refuse method on path of service, naming the rule that refused:
// the unsafe path, the service, the method or the path pattern; "" when the grants allow the
// call. whose names the grant list in the text ("the plugin declares").
func ExplainRefusal(grants []Grant, whose, service, method, path string) string {
	return grant.Explain(grants, whose, service, method, path)
}
