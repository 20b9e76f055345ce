// Package guests holds the plugins the plugin command's tests inspect, verify, push and pull: a
// third party's plugin (scopes) and one that makes the classic mistake of using net/http.
package guests
