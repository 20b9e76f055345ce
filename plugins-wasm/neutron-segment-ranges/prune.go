package main

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/openstack-sync/openstack-sync/pdk"
)

// prune deletes the ranges the profile owns (their name carries its prefix) that no desired spec
// names. Only the understack profile owns ranges by name, as the original operator did; under this
// project's profile nothing carries a marker, so nothing is deleted (and the host never calls it:
// its cleanup policy is NONE). A range Neutron keeps (409: networks use its ids) fails the prune,
// so the finalizer is kept and the next run retries (docs/contract.md Decision 7), where the
// original only logged it.
func prune(svc *pdk.ServiceClient, own naming, desired []Spec, authoritativeEmpty bool, log func(string, ...any)) error {
	if own.prefix == "" || len(desired) == 0 && !authoritativeEmpty {
		return nil
	}
	want := map[string]bool{}
	for _, s := range desired {
		want[own.neutronName(s.Name)] = true
	}
	idx, err := loadIndex(svc)
	if err != nil {
		return err
	}
	var kept []string
	for _, r := range idx.ranges {
		if !own.owns(r) || want[r.Name] {
			continue
		}
		err := svc.Call("DELETE", rangesPath+"/"+url.PathEscape(r.ID), nil, nil, nil)
		switch {
		case err == nil, pdk.IsNotFound(err):
			log("deleted segment range %s (%s): no NeutronSegmentRange claims it", r.Name, r.ID)
		default:
			log("keeping segment range %s (%s): %v", r.Name, r.ID, err)
			kept = append(kept, fmt.Sprintf("%s (%s: %v)", r.Name, r.ID, err))
		}
	}
	if len(kept) > 0 {
		return fmt.Errorf("segment ranges still present: %s", strings.Join(kept, ", "))
	}
	return nil
}
