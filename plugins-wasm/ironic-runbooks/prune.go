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

// listRaw reads every runbook, following Ironic's "next" links, and returns each one's JSON by
// name: the group's catalog decodes a runbook only when a CR looks it up.
func (a api) listRaw() (map[string]listedRunbook, error) {
	all, err := listAs(a, func(r *json.RawMessage) string {
		var id struct {
			UUID string `json:"uuid"`
		}
		_ = experimental.DecodeJSON(*r, &id)
		return id.UUID
	})
	if err != nil {
		return nil, err
	}
	byName := make(map[string]listedRunbook, len(all))
	for i, raw := range all {
		var rb struct {
			Name   string          `json:"name"`
			Traits json.RawMessage `json:"traits"`
		}
		if err := experimental.DecodeJSON(raw, &rb); err != nil {
			return nil, fmt.Errorf("list runbooks: item %d: %w", i, err)
		}
		byName[rb.Name] = listedRunbook{raw: raw, traits: rb.Traits != nil && string(rb.Traits) != "null"}
	}
	return byName, nil
}

// listedForPrune is what a prune reads of each runbook: with thousands listed, decoding their
// steps too would cost the guest memory it does not have to spare (docs/benchmarks.md).
type listedForPrune struct {
	UUID  string         `json:"uuid"`
	Name  string         `json:"name"`
	Extra map[string]any `json:"extra"`
}

func listAs[T any](a api, id func(*T) string) ([]T, error) {
	all, err := pdk.ListIronic(a.svc, runbooksPath, "runbooks", url.Values{"detail": {"true"}}, id)
	if err != nil {
		return nil, fmt.Errorf("list runbooks: %w", err)
	}
	return all, nil
}

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
	all, err := listAs(a, func(r *listedForPrune) string { return r.UUID })
	if err != nil {
		return out, err
	}
	var kept, failed []string
	for _, rb := range all {
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
