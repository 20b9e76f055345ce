package osapi

import (
	"encoding/json"
	"fmt"
	"net/url"

	"github.com/openstack-sync/openstack-sync/pdk"
)

// FromPDK adapts a PDK service client (with its microversion already chosen) to Service.
func FromPDK(c *pdk.ServiceClient) Service { return pdkService{c: c} }

type pdkService struct{ c *pdk.ServiceClient }

func (s pdkService) Call(method, path string, query url.Values, body, out any) error {
	resp, err := s.c.Do(pdk.Request{Method: method, Path: path, Query: query, Body: body})
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return NewHTTPError(method, path, resp.StatusCode, resp.Body)
	}
	if out == nil || len(resp.Body) == 0 {
		return nil
	}
	if err := json.Unmarshal(resp.Body, out); err != nil {
		return fmt.Errorf("%s %s: unreadable answer: %w", method, path, err)
	}
	return nil
}
