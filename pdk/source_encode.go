//go:build wasip1 || openstack_sync_native

package pdk

import (
	"encoding/json"

	"github.com/openstack-sync/openstack-sync/pdk/abi"
)

// encodeSourceRequest turns a SourceRequest into the source_request input (the wasm build's
// and the native build's).
func encodeSourceRequest(req *SourceRequest) ([]byte, error) {
	w := abi.SourceRequest{Source: req.Source, URL: req.URL, Method: req.Method, Path: req.Path, Query: req.Query,
		Headers: req.Header}
	if req.Secret != nil {
		w.Secret = &abi.SecretKeyRef{Name: req.Secret.Name, Key: req.Secret.Key}
	}
	var err error
	if w.Body, err = encodeBody(req.Method+" "+req.Source+" "+req.Path, req.Body); err != nil {
		return nil, err
	}
	return json.Marshal(w)
}
