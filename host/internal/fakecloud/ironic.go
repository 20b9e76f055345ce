package fakecloud

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// version is an Ironic microversion "1.N".
type version struct{ major, minor int }

func parseVersion(s string) (version, error) {
	maj, min, ok := strings.Cut(s, ".")
	if !ok {
		return version{}, fmt.Errorf("not MAJOR.MINOR")
	}
	a, err1 := strconv.Atoi(maj)
	b, err2 := strconv.Atoi(min)
	if err1 != nil || err2 != nil || a < 0 || b < 0 {
		return version{}, fmt.Errorf("not MAJOR.MINOR")
	}
	return version{a, b}, nil
}

func (v version) String() string { return fmt.Sprintf("%d.%d", v.major, v.minor) }
func (v version) atLeast(o version) bool {
	return v.major > o.major || v.major == o.major && v.minor >= o.minor
}

var ironicMin = version{1, 1}

// requestedIronicVersion reads the microversion a request asks for, from the legacy header or
// the generic OpenStack-API-Version header.
func requestedIronicVersion(h http.Header) string {
	if v := h.Get("X-OpenStack-Ironic-API-Version"); v != "" {
		return strings.TrimSpace(v)
	}
	if svc, v, ok := strings.Cut(strings.TrimSpace(h.Get("OpenStack-API-Version")), " "); ok && svc == "baremetal" {
		return strings.TrimSpace(v)
	}
	return ""
}

// RunbookStep is one step of an Ironic runbook, as the API reads it.
type RunbookStep struct {
	Interface string         `json:"interface"`
	Step      string         `json:"step"`
	Args      map[string]any `json:"args"`
	Order     int            `json:"order"`
}

func ironicError(w http.ResponseWriter, status int, format string, args ...any) {
	inner, _ := json.Marshal(map[string]any{"faultcode": "Client", "faultstring": fmt.Sprintf(format, args...), "debuginfo": nil})
	writeJSON(w, status, map[string]any{"error_message": string(inner)})
}

func ironicVersionError(w http.ResponseWriter, status int, title, desc string) {
	inner, _ := json.Marshal(map[string]any{"code": status, "title": title, "description": desc})
	writeJSON(w, status, map[string]any{"error_message": string(inner)})
}

// serveIronic negotiates the microversion, authenticates, and hands the collections osapi knows
// (runbooks, deploy templates) to it with the negotiated version.
func (c *Cloud) serveIronic(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-OpenStack-Ironic-API-Minimum-Version", ironicMin.String())
	w.Header().Set("X-OpenStack-Ironic-API-Maximum-Version", c.ironicMax.String())
	v, ok := c.negotiateIronic(w, r)
	if !ok {
		return
	}
	w.Header().Set("X-OpenStack-Ironic-API-Version", v.String())
	versionDoc := map[string]any{"id": "v1", "status": "CURRENT", "min_version": ironicMin.String(),
		"version": c.ironicMax.String(), "links": []any{map[string]any{"href": c.ironic.URL + "/v1/", "rel": "self"}}}
	switch strings.TrimSuffix(r.URL.Path, "/") {
	case "":
		writeJSON(w, http.StatusOK, map[string]any{"name": "OpenStack Ironic API",
			"default_version": versionDoc, "versions": []any{versionDoc}})
		return
	case "/v1":
		writeJSON(w, http.StatusOK, map[string]any{"id": "v1", "version": versionDoc,
			"links": []any{map[string]any{"href": c.ironic.URL + "/v1/", "rel": "self"}}})
		return
	}
	t := c.authenticate(w, r)
	if t == nil {
		return
	}
	if !c.serveKnown(Baremetal, w, r, t, v.String()) {
		ironicError(w, http.StatusNotFound, "The resource could not be found.")
	}
}

// negotiateIronic picks the request's microversion or writes Ironic's 406.
func (c *Cloud) negotiateIronic(w http.ResponseWriter, r *http.Request) (version, bool) {
	raw := requestedIronicVersion(r.Header)
	switch raw {
	case "":
		return ironicMin, true
	case "latest":
		return c.ironicMax, true
	}
	v, err := parseVersion(raw)
	rangeText := fmt.Sprintf("The supported version range is: [%s, %s].", ironicMin, c.ironicMax)
	switch {
	case err != nil:
		ironicVersionError(w, http.StatusNotAcceptable, "Not Acceptable", "Invalid value for X-OpenStack-Ironic-API-Version header")
	case v.major != 1:
		ironicVersionError(w, http.StatusNotAcceptable, "Not Acceptable", fmt.Sprintf(
			"Mutually exclusive versions requested. Version %s requested but not supported by this service. %s", v, rangeText))
	case !v.atLeast(ironicMin) || !c.ironicMax.atLeast(v):
		ironicVersionError(w, http.StatusNotAcceptable, "Not Acceptable", fmt.Sprintf(
			"Version %s was requested but the minor version is not supported by this service. %s", v, rangeText))
	default:
		return v, true
	}
	return version{}, false
}
