package osapitest

import (
	"encoding/json"
	"fmt"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/pdktest"
)

// PDKHandler lets a test cloud answer a pdktest host, so a plugin's registered handlers run
// against the same stateful fake as its logic tests.
func PDKHandler(h Handler) func(*pdk.Request) (*pdk.Response, error) {
	return func(req *pdk.Request) (*pdk.Response, error) {
		r := Request{Method: req.Method, Path: req.Path, Query: req.Query}
		switch b := req.Body.(type) {
		case nil:
		case []byte:
			r.Body = b
		case json.RawMessage:
			r.Body = b
		default:
			raw, err := json.Marshal(b)
			if err != nil {
				return nil, fmt.Errorf("encode %s %s body: %w", req.Method, req.Path, err)
			}
			r.Body = raw
		}
		status, body := h(r)
		return pdktest.JSON(status, body), nil
	}
}
