// Package intern shares the copies of a string that a plugin keeps many of. A group's view of
// thousands of OpenStack resources repeats the same driver, service type, description or
// free-form metadata in most items, and the JSON decoder gives each item a copy of its own: at
// 20,000 router flavors those copies were a third of the guest's 32 MiB (docs/scaling.md).
package intern

// Table hands out one copy per distinct string. Keep it only while a view is built: it holds every
// string it has seen, so it is dropped once the view is, and the duplicates become garbage.
type Table map[string]string

// Of is s, or the copy of s the table gave out before.
func (t Table) Of(s string) string {
	if s == "" {
		return ""
	}
	if v, ok := t[s]; ok {
		return v
	}
	t[s] = s
	return s
}
