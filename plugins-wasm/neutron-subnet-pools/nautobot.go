package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/experimental"
	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/invalidspec"
)

// The Nautobot side: a CR names prefixes by id; each is looked up once per credential group (the
// group cache keeps the outcome), with the CR's location guardrail as a filter, then checked
// against the other guardrails. Nautobot owns only the CIDRs; nothing policy-shaped is read.

// prefixMissingReason is the condition reason of a CR whose prefix Nautobot does not have (the
// original's).
const prefixMissingReason = "NautobotPrefixMissing"

// prefixesPath is Nautobot's prefix list; the trailing slash is Django's (without it Nautobot
// redirects, and the host follows no redirect).
const prefixesPath = "api/ipam/prefixes/"

// nautobotPrefix is what the plugin reads of a Nautobot prefix.
type nautobotPrefix struct {
	ID, Prefix, Status, Type, Namespace string
	Tags                                []string
}

// resolved is a CR's pool as Nautobot makes it: its CIDRs, IP family and the links reported on
// the CR's status.
type resolved struct {
	Prefixes  []string
	IPVersion int
	Links     []prefixLink
}

// prefixLink is one entry of status.prefixes.
type prefixLink struct {
	ID   string `json:"id"`
	CIDR string `json:"cidr"`
	URL  string `json:"url"`
}

// prefixURL is the Nautobot UI page of a prefix.
func prefixURL(base, id string) string {
	return strings.TrimRight(base, "/") + "/ipam/prefixes/" + id + "/"
}

// lookups is the group's cache of prefix lookups, by everything that changes the answer.
type lookups map[lookupKey]*lookup

type lookupKey struct{ url, version, secret, key, location, id string }

type lookup struct {
	prefix *nautobotPrefix
	err    error
}

const lookupsKey = "neutron-subnet-pools/nautobot"

// resolveSpec loads every referenced prefix, checks the guardrails and returns the CIDRs. Any
// failure is the whole CR's: nothing is written to Neutron from a half-resolved spec.
func resolveSpec(ctx *pdk.Context, spec *Spec, site string) (*resolved, error) {
	ids, err := spec.nautobotRefs()
	if err != nil {
		return nil, err
	}
	req := spec.require()
	location := strings.TrimSpace(req.Location)
	if location == "" {
		location = site
	}
	cache, _ := ctx.Cache()[lookupsKey].(lookups)
	if cache == nil {
		cache = lookups{}
		ctx.Cache()[lookupsKey] = cache
	}
	n := spec.Nautobot
	client := ctx.Source("nautobot", n.URL).WithSecret(n.TokenSecretRef.SecretName, n.TokenSecretRef.Key)
	var prefixes []*nautobotPrefix
	for _, id := range ids {
		key := lookupKey{n.URL, spec.apiVersion(), n.TokenSecretRef.SecretName, n.TokenSecretRef.Key, location, id}
		l, ok := cache[key]
		if !ok {
			p, err := getPrefix(client, spec, id, location)
			l = &lookup{prefix: p, err: err}
			cache[key] = l
		}
		if l.err != nil {
			return nil, l.err
		}
		prefixes = append(prefixes, l.prefix)
	}
	for _, p := range prefixes {
		if errs := requirementErrors(p, req); len(errs) > 0 {
			label := p.ID
			if label == "" {
				label = p.Prefix
			}
			return nil, invalidspec.Errorf("Nautobot prefix %s does not satisfy spec.nautobot.require: %s", label, strings.Join(errs, "; "))
		}
	}
	out := &resolved{}
	versions := map[int]bool{}
	for _, p := range prefixes {
		net, err := netip.ParsePrefix(p.Prefix)
		if err != nil {
			return nil, invalidspec.Errorf("Nautobot prefix '%s' is not valid CIDR notation", p.Prefix)
		}
		versions[family(net)] = true
		out.IPVersion = family(net)
		out.Prefixes = append(out.Prefixes, p.Prefix)
		if p.ID != "" {
			out.Links = append(out.Links, prefixLink{ID: p.ID, CIDR: p.Prefix, URL: prefixURL(n.URL, p.ID)})
		}
	}
	if len(versions) > 1 {
		return nil, invalidspec.Errorf("Nautobot subnet pool '%s' contains mixed IP versions: %s", spec.Name, strings.Join(out.Prefixes, ", "))
	}
	return out, nil
}

// getPrefix looks one prefix up by id, filtered by location when one is required: Nautobot
// serialises a prefix's locations in ways that depend on the API version, so the location is a
// filter of the query, not a field to read. depth=1 brings the status, namespace and tags by
// name in the same answer (at depth 0 they are references that would each cost a request).
func getPrefix(client *pdk.SourceClient, spec *Spec, id, location string) (*nautobotPrefix, error) {
	link := prefixURL(spec.Nautobot.URL, id)
	q := url.Values{"id": {id}, "depth": {"1"}}
	if location != "" {
		q.Set("location", location)
	}
	var results []json.RawMessage
	for page := 0; ; page++ {
		resp, err := client.Do(pdk.SourceRequest{Method: "GET", Path: prefixesPath, Query: q,
			Header: map[string][]string{"Accept": {"application/json; version=" + spec.apiVersion()}}})
		if err != nil {
			return nil, hostFailure(err, id, link)
		}
		if resp.StatusCode == pdk.StatusBadRequest && location != "" && invalidLocation(resp.Body, location) {
			return nil, invalidspec.Errorf("spec.nautobot.require.location '%s' is not a valid Nautobot location; use the exact leaf Site name (for example 'iad3-dev')", location)
		}
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			return nil, fmt.Errorf("Nautobot prefix lookup failed for id %s (%s): %s", id, link, answerText(resp))
		}
		var body struct {
			Next    *string           `json:"next"`
			Results []json.RawMessage `json:"results"`
		}
		if err := experimental.DecodeJSON(resp.Body, &body); err != nil || body.Results == nil {
			return nil, fmt.Errorf("Nautobot prefix lookup failed for id %s (%s): the answer is not a Nautobot prefix list", id, link)
		}
		results = append(results, body.Results...)
		if body.Next == nil || *body.Next == "" || page > 100 {
			break
		}
		if q, err = nextQuery(*body.Next, spec.Nautobot.URL); err != nil {
			return nil, fmt.Errorf("Nautobot prefix lookup failed for id %s (%s): %v", id, link, err)
		}
	}
	switch {
	case len(results) == 0 && location != "":
		return nil, pdk.WithReason(prefixMissingReason, fmt.Errorf("Nautobot prefix %s (%s) was not found under location '%s': it does not exist or is not associated with that location (spec.nautobot.require.location)", id, link, location))
	case len(results) == 0:
		return nil, pdk.WithReason(prefixMissingReason, fmt.Errorf("Nautobot prefix %s (%s) was not found", id, link))
	case len(results) > 1:
		return nil, fmt.Errorf("Nautobot prefix lookup failed for id %s (%s): %d prefixes answer to one id", id, link, len(results))
	}
	return decodePrefix(results[0])
}

// nextQuery turns Nautobot's absolute next link into the query of the same list, refusing one
// that leaves it.
func nextQuery(next, base string) (url.Values, error) {
	u, err := url.Parse(next)
	if err != nil || !strings.HasSuffix(u.Path, "/"+prefixesPath) {
		return nil, fmt.Errorf("Nautobot's next page link %q is not the prefix list", next)
	}
	b, err := url.Parse(base)
	if err != nil || !strings.EqualFold(u.Host, b.Host) {
		return nil, fmt.Errorf("Nautobot's next page link %q leaves spec.nautobot.url", next)
	}
	return u.Query(), nil
}

// hostFailure words a request the host did not send or got no answer to, naming the CR field
// behind it: the URL (not allow-listed), the token's Secret (missing or empty) or Nautobot itself.
func hostFailure(err error, id, link string) error {
	var he *pdk.HostError
	if !errors.As(err, &he) {
		return fmt.Errorf("Nautobot prefix lookup failed for id %s (%s): %v", id, link, err)
	}
	switch he.Kind {
	case "source_denied":
		return pdk.Permanent(invalidspec.Errorf("spec.nautobot.url: %s", he.Message))
	case "secret":
		return pdk.Permanent(invalidspec.Errorf("spec.nautobot.tokenSecretRef: %s", he.Message))
	case "source":
		return fmt.Errorf("Nautobot is unreachable: %s", he.Message)
	}
	return fmt.Errorf("Nautobot prefix lookup failed for id %s (%s): %s", id, link, he.Message)
}

// invalidLocation reports whether Nautobot's 400 is about the location filter (the original's
// test: the body names the field or the value).
func invalidLocation(body []byte, location string) bool {
	text := string(body)
	return strings.Contains(text, "location") || strings.Contains(text, location)
}

// answerText is a non-2xx answer in one stable line: the status and Nautobot's own words
// ({"detail": ...}, or a field's errors), or what the body is when it is not Nautobot's.
func answerText(resp *pdk.Response) string {
	text := fmt.Sprintf("HTTP %d", resp.StatusCode)
	if s := statusText(resp.StatusCode); s != "" {
		text += " " + s
	}
	var detail struct {
		Detail string `json:"detail"`
	}
	var fields map[string][]string
	switch {
	case experimental.DecodeJSON(resp.Body, &detail) == nil && detail.Detail != "":
		return text + ": " + detail.Detail
	case experimental.DecodeJSON(resp.Body, &fields) == nil && len(fields) > 0:
		var parts []string
		for k, v := range fields {
			parts = append(parts, k+": "+strings.Join(v, " "))
		}
		slices.Sort(parts)
		return text + ": " + strings.Join(parts, "; ")
	case len(resp.Body) > 0 && !json.Valid(resp.Body) && resp.StatusCode >= 500:
		return text + " (a server error page, not an API answer)"
	case len(resp.Body) > 0 && !json.Valid(resp.Body):
		return text + " (not Nautobot's JSON API: check spec.nautobot.url)"
	}
	return text
}

func statusText(code int) string {
	return map[int]string{400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 406: "Not Acceptable",
		412: "Precondition Failed", 429: "Too Many Requests", 500: "Internal Server Error", 502: "Bad Gateway",
		503: "Service Unavailable", 504: "Gateway Timeout"}[code]
}

// decodePrefix reads the fields the guardrails compare, in every shape Nautobot answers them
// (fieldText).
func decodePrefix(raw json.RawMessage) (*nautobotPrefix, error) {
	var r struct {
		ID        json.RawMessage   `json:"id"`
		Prefix    json.RawMessage   `json:"prefix"`
		Status    json.RawMessage   `json:"status"`
		Type      json.RawMessage   `json:"type"`
		Namespace json.RawMessage   `json:"namespace"`
		Tags      []json.RawMessage `json:"tags"`
	}
	if err := experimental.DecodeJSON(raw, &r); err != nil {
		return nil, fmt.Errorf("Nautobot prefix record is unreadable: %v", err)
	}
	p := &nautobotPrefix{ID: fieldText(r.ID), Prefix: fieldText(r.Prefix), Status: fieldText(r.Status),
		Type: fieldText(r.Type), Namespace: fieldText(r.Namespace)}
	if p.Prefix == "" {
		return nil, invalidspec.Errorf("Nautobot prefix record %s has no prefix value", p.ID)
	}
	for _, t := range r.Tags {
		if s := fieldText(t); s != "" {
			p.Tags = append(p.Tags, s)
		}
	}
	return p, nil
}

// fieldText is a comparable string from a Nautobot field, as the original reads them: a string
// as is; a related object by its name, a choice by its value ({"value": "pool", "label": "Pool"}:
// "pool"), anything else by its display.
func fieldText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if experimental.DecodeJSON(raw, &s) == nil {
		return strings.TrimSpace(s)
	}
	var o struct {
		Name    string `json:"name"`
		Value   any    `json:"value"`
		Display string `json:"display"`
	}
	if experimental.DecodeJSON(raw, &o) != nil {
		return ""
	}
	switch {
	case strings.TrimSpace(o.Name) != "":
		return strings.TrimSpace(o.Name)
	case o.Value != nil && fmt.Sprint(o.Value) != "":
		return strings.TrimSpace(fmt.Sprint(o.Value))
	}
	return strings.TrimSpace(o.Display)
}

// requirementErrors lists the guardrails a prefix fails, in the original's words. The location
// is the lookup's filter, not checked here.
func requirementErrors(p *nautobotPrefix, req Require) []string {
	var errs []string
	repr := func(s string) string {
		if s == "" {
			return "None"
		}
		return quoted(s)
	}
	if want := strings.TrimSpace(req.Status); want != "" && p.Status != want {
		errs = append(errs, fmt.Sprintf("status is %s, expected %s", repr(p.Status), quoted(want)))
	}
	if want := strings.TrimSpace(req.Type); want != "" && p.Type != want {
		errs = append(errs, fmt.Sprintf("type is %s, expected %s", repr(p.Type), quoted(want)))
	}
	if want := strings.TrimSpace(req.Namespace); want != "" && p.Namespace != want {
		errs = append(errs, fmt.Sprintf("namespace is %s, expected %s", repr(p.Namespace), quoted(want)))
	}
	var missing []string
	for _, t := range req.Tags {
		if t = strings.TrimSpace(t); t != "" && !slices.Contains(p.Tags, t) {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		errs = append(errs, "missing tags "+pyList(missing))
	}
	return errs
}
