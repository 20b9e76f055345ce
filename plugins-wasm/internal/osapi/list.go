package osapi

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
)

// PageSize is the page length asked of list calls. Big enough that a typical cloud answers in one
// page, small enough to bound one response (the guest decodes JSON at about a tenth of native
// speed).
const PageSize = 100

// ListNeutron reads every item of a Neutron collection, following its "<key>_links" next link by
// marker pagination. Services with pagination disabled ignore limit and return everything in one
// page without links, which also ends the loop.
func ListNeutron(svc Service, path, key string, query url.Values) ([]json.RawMessage, error) {
	var all []json.RawMessage
	marker := ""
	for {
		q := url.Values{}
		for k, v := range query {
			q[k] = append([]string(nil), v...)
		}
		q.Set("limit", strconv.Itoa(PageSize))
		if marker != "" {
			q.Set("marker", marker)
		}
		var page map[string]json.RawMessage
		if err := svc.Call("GET", path, q, nil, &page); err != nil {
			return nil, err
		}
		var items []json.RawMessage
		if raw, ok := page[key]; ok {
			if err := json.Unmarshal(raw, &items); err != nil {
				return nil, fmt.Errorf("GET %s: %q is not a list: %w", path, key, err)
			}
		}
		all = append(all, items...)
		var links []struct {
			Rel  string `json:"rel"`
			Href string `json:"href"`
		}
		if raw, ok := page[key+"_links"]; ok {
			_ = json.Unmarshal(raw, &links)
		}
		next := ""
		for _, l := range links {
			if l.Rel == "next" {
				next = l.Href
			}
		}
		if next == "" || len(items) == 0 {
			return all, nil
		}
		var last struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(items[len(items)-1], &last); err != nil || last.ID == "" {
			return nil, fmt.Errorf("GET %s: a page with a next link ends in an item without an id", path)
		}
		if last.ID == marker {
			return nil, fmt.Errorf("GET %s: pagination did not advance past marker %s", path, marker)
		}
		marker = last.ID
	}
}
