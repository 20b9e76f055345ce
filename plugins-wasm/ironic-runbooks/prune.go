package main

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/osapi"
)

// pruneOutcome says what a prune did, for the caller to log.
type pruneOutcome struct {
	Deleted []string
	// Unowned are runbooks no CR claims that lack the marker: never deleted.
	Unowned []string
}

// list reads every runbook with marker pagination. It follows Ironic's "next" link rather than
// stopping at a short page, because Ironic may cap a page below the limit asked for.
func (a api) list() ([]runbook, error) {
	var all []runbook
	marker := ""
	for {
		q := url.Values{"detail": {"true"}, "limit": {strconv.Itoa(osapi.PageSize)}}
		if marker != "" {
			q.Set("marker", marker)
		}
		var page struct {
			Runbooks []runbook `json:"runbooks"`
			Next     string    `json:"next"`
		}
		if err := a.svc.Call("GET", runbooksPath, q, nil, &page); err != nil {
			return nil, fmt.Errorf("list runbooks: %w", err)
		}
		all = append(all, page.Runbooks...)
		if page.Next == "" || len(page.Runbooks) == 0 {
			return all, nil
		}
		last := page.Runbooks[len(page.Runbooks)-1].UUID
		if last == "" || last == marker {
			return nil, fmt.Errorf("list runbooks: a page with a next link ends in a runbook without a new uuid")
		}
		marker = last
	}
}

// prune deletes owned runbooks that no desired spec names. A delete Ironic refuses with 409 (the
// runbook is in use) is an incomplete prune: the error keeps the finalizer of the deleted CR so
// the next run retries (spec Decision 7), where the original only logged it.
func prune(a api, desired []Spec, authoritativeEmpty bool) (pruneOutcome, error) {
	var out pruneOutcome
	if len(desired) == 0 && !authoritativeEmpty {
		return out, nil
	}
	want := map[string]bool{}
	for _, s := range desired {
		want[s.RunbookName] = true
	}
	all, err := a.list()
	if err != nil {
		return out, err
	}
	var kept, failed []string
	for _, rb := range all {
		if rb.Name == "" || want[rb.Name] {
			continue
		}
		if !owned(rb.Extra) {
			out.Unowned = append(out.Unowned, rb.Name)
			continue
		}
		if rb.UUID == "" {
			failed = append(failed, fmt.Sprintf("%s: listed without a uuid", rb.Name))
			continue
		}
		err := a.svc.Call("DELETE", runbookPath(rb.UUID), nil, nil, nil)
		switch {
		case err == nil, osapi.IsNotFound(err):
			out.Deleted = append(out.Deleted, rb.Name)
		case osapi.IsConflict(err):
			kept = append(kept, fmt.Sprintf("%s (%s)", rb.Name, err))
		default:
			failed = append(failed, fmt.Sprintf("%s: %s", rb.Name, err))
		}
	}
	var msgs []string
	if len(kept) > 0 {
		msgs = append(msgs, "runbooks still present: "+strings.Join(kept, ", "))
	}
	if len(failed) > 0 {
		msgs = append(msgs, "runbooks not deleted: "+strings.Join(failed, ", "))
	}
	if len(msgs) > 0 {
		return out, fmt.Errorf("%s", strings.Join(msgs, "; "))
	}
	return out, nil
}
