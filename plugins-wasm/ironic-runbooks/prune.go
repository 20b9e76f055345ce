package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/experimental"
)

// pruneOutcome says what a prune did, for the caller to log.
type pruneOutcome struct {
	Deleted []string
	// Unowned are runbooks no CR claims that lack the profile's marker: never deleted.
	Unowned []string
	// Ungrouped are runbooks no CR of the group claims that carry the marker without the group
	// a per-group prune deletes for: never deleted, they may be another group's.
	Ungrouped []string
}

// listRaw reads every runbook into the catalog, a page at a time, following Ironic's "next"
// links: each one's JSON by name while the catalog keeps less than keepBytes, a digest of it after
// that. The group's catalog decodes a runbook only when a CR looks it up.
func (a api) listRaw() error {
	c := a.known
	c.listed, c.kept = map[string]listedRunbook{}, 0
	i := 0
	err := pdk.EachIronic(a.svc, runbooksPath, "runbooks", url.Values{"detail": {"true"}}, func(r *json.RawMessage) string {
		var id struct {
			UUID string `json:"uuid"`
		}
		_ = experimental.DecodeJSON(*r, &id)
		return id.UUID
	}, func(page []json.RawMessage) error {
		for _, raw := range page {
			var rb struct {
				Name   string          `json:"name"`
				Traits json.RawMessage `json:"traits"`
			}
			l := listedRunbook{}
			if name, traits, ok := listedName(raw); ok {
				rb.Name, l.traits = string(name), traits
			} else {
				if err := experimental.DecodeJSON(raw, &rb); err != nil {
					return fmt.Errorf("item %d: %w", i, err)
				}
				l.traits = rb.Traits != nil && string(rb.Traits) != "null"
			}
			i++
			c.kept -= len(c.listed[rb.Name].raw)
			if c.kept+len(raw) <= c.keepBytes {
				l.raw, c.kept = raw, c.kept+len(raw)
			} else {
				l.sum, l.digested = digest(raw), true
			}
			c.listed[rb.Name] = l
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("list runbooks: %w", err)
	}
	return nil
}

// listedForPrune is what a prune reads of each runbook: with thousands listed, decoding their
// steps too would cost the guest memory it does not have to spare (docs/benchmarks.md). A prune
// reads them a page at a time and keeps only the runbooks it deletes.
//
// Its fields are all the prune asks Ironic for (pruneFields): the uuid to delete by and to page
// with, the name a CR claims, and extra, which holds the ownership marker.
type listedForPrune struct {
	UUID  string         `json:"uuid"`
	Name  string         `json:"name"`
	Extra map[string]any `json:"extra"`
}

// pruneQuery lists only listedForPrune's fields: what Ironic sent a prune was every runbook in
// detail (its steps, arguments, traits, times), about 2 KB each at a site, where these are under
// a third of that; at 20,000 runbooks that was some 40 MB for the service to encode and the host
// to carry and the guest to scan for three fields. Ironic takes fields on its runbooks from their
// first microversion (1.92), never with detail=true (400), and repeats them in its next link;
// without uuid among them it would leave the uuid out, and the prune pages and deletes by it.
var pruneQuery = url.Values{"fields": {"uuid,name,extra"}}

// prune deletes owned runbooks that no desired spec names. A delete Ironic refuses with 409 (the
// runbook is in use) is an incomplete prune: the error keeps the finalizer of the deleted CR so
// the next run retries (docs/contract.md Decision 7), where the original only logged it.
func prune(a api, desired []Spec, authoritativeEmpty bool) (pruneOutcome, error) {
	var out pruneOutcome
	if len(desired) == 0 && !authoritativeEmpty {
		return out, nil
	}
	want := map[string]bool{}
	for _, s := range desired {
		want[s.RunbookName] = true
	}
	// Deleted only once the list is read: Ironic's next page starts after the uuid of the last
	// runbook of this one, which must still exist.
	var doomed []listedForPrune
	err := pdk.EachIronic(a.svc, runbooksPath, "runbooks", pruneQuery, func(r *listedForPrune) string { return r.UUID },
		func(page []listedForPrune) error {
			for _, rb := range page {
				if rb.Name == "" || want[rb.Name] {
					continue
				}
				if !a.own.Own.owns(rb.Extra) {
					switch {
					case !a.own.Own.marked(rb.Extra):
						out.Unowned = append(out.Unowned, rb.Name)
					case a.own.Own.groupOf(rb.Extra) == "":
						out.Ungrouped = append(out.Ungrouped, rb.Name)
					}
					// Another group's: its own prune decides.
					continue
				}
				doomed = append(doomed, listedForPrune{UUID: rb.UUID, Name: rb.Name})
			}
			return nil
		})
	if err != nil {
		return out, fmt.Errorf("list runbooks: %w", err)
	}
	var kept, failed []string
	for _, rb := range doomed {
		if rb.UUID == "" {
			failed = append(failed, fmt.Sprintf("%s: listed without a uuid", rb.Name))
			continue
		}
		err := a.svc.Delete(runbookPath(rb.UUID), nil, nil)
		switch {
		case err == nil, pdk.IsNotFound(err):
			out.Deleted = append(out.Deleted, rb.Name)
		case pdk.IsConflict(err):
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
