package pdk

import (
	"fmt"
	"net/url"
	"reflect"
	"strconv"
	"strings"
)

// PageSize is the page length the list helpers ask for unless the query names one: big enough
// that a typical cloud answers in one page, small enough to bound one response (the guest decodes
// JSON far slower than a native program). A plugin that reads a large collection with little
// kept per item MAY ask for larger pages with a limit in its query (Ironic's and Neutron's
// default maximum is 1000; a service that caps a page below it still links the next one).
const PageSize = 100

// Link is one entry of a Neutron "<collection>_links" list.
type Link struct {
	Rel  string `json:"rel"`
	Href string `json:"href"`
}

// ListNeutron reads every item of a Neutron collection at path (its JSON key is key, e.g.
// "flavors"), following the "<key>_links" next link by marker pagination: the marker is the id
// of a page's last item, which id returns. query is sent with every page (marker is set here,
// and limit to PageSize unless query has one). A Neutron with pagination disabled ignores limit and answers everything in one page
// without links, which ends the loop too.
func ListNeutron[T any](c *ServiceClient, path, key string, query url.Values, id func(*T) string) ([]T, error) {
	return collect(c, path, key, query, id, false)
}

// EachNeutron is ListNeutron for a collection too large to hold at once: it hands fn each page's
// items as the page is read and keeps none of them, so a plugin keeps only what it takes from
// each item. fn's error ends the list (no further page is read) and is returned; fn
// MAY keep or change the items (the next page's marker was read before fn).
func EachNeutron[T any](c *ServiceClient, path, key string, query url.Values, id func(*T) string, fn func(page []T) error) error {
	return paginate(c, path, key, query, id, false, fn)
}

// ListIronic reads every item of an Ironic collection at path (its JSON key is key, e.g.
// "runbooks"), following the page's "next" link by marker pagination: the marker is the uuid of a
// page's last item, which id returns. It follows "next" rather than stopping at a short page,
// because Ironic may cap a page below the limit asked for.
func ListIronic[T any](c *ServiceClient, path, key string, query url.Values, id func(*T) string) ([]T, error) {
	return collect(c, path, key, query, id, true)
}

// EachIronic is ListIronic a page at a time, as EachNeutron is ListNeutron: the runbooks plugin
// keeps 20,000 listed runbooks' digests this way, where their JSON (about 40 MB) did not fit the
// sandbox.
func EachIronic[T any](c *ServiceClient, path, key string, query url.Values, id func(*T) string, fn func(page []T) error) error {
	return paginate(c, path, key, query, id, true, fn)
}

// collect is paginate keeping every page's items.
func collect[T any](c *ServiceClient, path, key string, query url.Values, id func(*T) string, ironic bool) ([]T, error) {
	var all []T
	err := paginate(c, path, key, query, id, ironic, func(items []T) error {
		if all == nil {
			all = items
		} else {
			all = append(all, items...)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return all, nil
}

// pageType is the struct one page decodes into in a single pass: the items under key and the
// service's next link. It is built per collection key because Go struct tags are static; the
// alternative, a map of raw members decoded again, scans every page twice, which in wasm costs
// as much as the items themselves.
func pageType[T any](key string) reflect.Type {
	return reflect.StructOf([]reflect.StructField{
		{Name: "Items", Type: reflect.TypeFor[[]T](), Tag: reflect.StructTag(`json:"` + key + `"`)},
		{Name: "Links", Type: reflect.TypeFor[[]Link](), Tag: reflect.StructTag(`json:"` + key + `_links"`)},
		{Name: "Next", Type: reflect.TypeFor[string](), Tag: `json:"next"`},
	})
}

// paginate is the marker loop both services share, handing each page's items to fn; ironic
// picks the next link's shape.
func paginate[T any](c *ServiceClient, path, key string, query url.Values, id func(*T) string, ironic bool, fn func([]T) error) error {
	if strings.ContainsAny(key, "\"`,") {
		return fmt.Errorf("GET %s: collection key %q cannot be a JSON member name here", path, key)
	}
	typ := pageType[T](key)
	marker := ""
	for {
		q := make(url.Values, len(query)+2)
		for k, v := range query {
			q[k] = append([]string(nil), v...)
		}
		if q.Get("limit") == "" {
			q.Set("limit", strconv.Itoa(PageSize))
		}
		if marker != "" {
			q.Set("marker", marker)
		}
		page := reflect.New(typ)
		if err := c.Get(path, q, page.Interface()); err != nil {
			return err
		}
		items := page.Elem().Field(0).Interface().([]T)
		more := false
		if ironic {
			more = page.Elem().Field(2).String() != ""
		} else {
			for _, l := range page.Elem().Field(1).Interface().([]Link) {
				if l.Rel == "next" && l.Href != "" {
					more = true
				}
			}
		}
		last := ""
		if len(items) > 0 {
			last = id(&items[len(items)-1])
		}
		if err := fn(items); err != nil {
			return err
		}
		if !more || len(items) == 0 {
			return nil
		}
		if last == "" {
			return fmt.Errorf("GET %s: a page with a next link ends in an item without an id", path)
		}
		if last == marker {
			return fmt.Errorf("GET %s: pagination did not advance past marker %s", path, marker)
		}
		marker = last
	}
}
