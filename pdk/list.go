package pdk

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
)

// PageSize is the page length the list helpers ask for: big enough that a typical cloud answers
// in one page, small enough to bound one response (the guest decodes JSON far slower than a
// native program).
const PageSize = 100

// Link is one entry of a Neutron "<collection>_links" list.
type Link struct {
	Rel  string `json:"rel"`
	Href string `json:"href"`
}

// ListNeutron reads every item of a Neutron collection at path (its JSON key is key, e.g.
// "flavors"), following the "<key>_links" next link by marker pagination: the marker is the id
// of a page's last item, which id returns. query is sent with every page (limit and marker are
// set here). A Neutron with pagination disabled ignores limit and answers everything in one page
// without links, which ends the loop too.
func ListNeutron[T any](c *ServiceClient, path, key string, query url.Values, id func(*T) string) ([]T, error) {
	return paginate(c, path, key, query, id, func(page map[string]json.RawMessage) (bool, error) {
		raw, ok := page[key+"_links"]
		if !ok {
			return false, nil
		}
		var links []Link
		if err := json.Unmarshal(raw, &links); err != nil {
			return false, fmt.Errorf("GET %s: %q is not a list of links: %w", path, key+"_links", err)
		}
		for _, l := range links {
			if l.Rel == "next" && l.Href != "" {
				return true, nil
			}
		}
		return false, nil
	})
}

// ListIronic reads every item of an Ironic collection at path (its JSON key is key, e.g.
// "runbooks"), following the page's "next" link by marker pagination: the marker is the uuid of a
// page's last item, which id returns. It follows "next" rather than stopping at a short page,
// because Ironic may cap a page below the limit asked for.
func ListIronic[T any](c *ServiceClient, path, key string, query url.Values, id func(*T) string) ([]T, error) {
	return paginate(c, path, key, query, id, func(page map[string]json.RawMessage) (bool, error) {
		raw, ok := page["next"]
		if !ok {
			return false, nil
		}
		var next string
		if err := json.Unmarshal(raw, &next); err != nil {
			return false, fmt.Errorf("GET %s: \"next\" is not a string: %w", path, err)
		}
		return next != "", nil
	})
}

// paginate is the marker loop both services share; hasNext reads the page's own next link.
func paginate[T any](c *ServiceClient, path, key string, query url.Values, id func(*T) string,
	hasNext func(map[string]json.RawMessage) (bool, error)) ([]T, error) {
	var all []T
	marker := ""
	for {
		q := make(url.Values, len(query)+2)
		for k, v := range query {
			q[k] = append([]string(nil), v...)
		}
		q.Set("limit", strconv.Itoa(PageSize))
		if marker != "" {
			q.Set("marker", marker)
		}
		var page map[string]json.RawMessage
		if err := c.Get(path, q, &page); err != nil {
			return nil, err
		}
		var items []T
		if raw, ok := page[key]; ok {
			if err := json.Unmarshal(raw, &items); err != nil {
				return nil, fmt.Errorf("GET %s: %q is not a list of items: %w", path, key, err)
			}
		}
		all = append(all, items...)
		more, err := hasNext(page)
		if err != nil {
			return nil, err
		}
		if !more || len(items) == 0 {
			return all, nil
		}
		last := id(&items[len(items)-1])
		if last == "" {
			return nil, fmt.Errorf("GET %s: a page with a next link ends in an item without an id", path)
		}
		if last == marker {
			return nil, fmt.Errorf("GET %s: pagination did not advance past marker %s", path, marker)
		}
		marker = last
	}
}
