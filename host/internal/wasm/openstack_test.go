package wasm

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

func TestResponseFraming(t *testing.T) {
	cases := []struct {
		name string
		resp plugin.Response
		want string
	}{
		{"JSON body follows the head as is", plugin.Response{StatusCode: 200,
			Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte("{\"a\":\n1}")},
			"{\"status\":200,\"headers\":{\"Content-Type\":[\"application/json\"]}}\n{\"a\":\n1}"},
		{"text body", plugin.Response{StatusCode: 503, Body: []byte("Service Unavailable")},
			"{\"status\":503,\"headers\":null}\nService Unavailable"},
		{"no body", plugin.Response{StatusCode: 204, Header: http.Header{}}, "{\"status\":204,\"headers\":{}}\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, string(encodeResponse(&c.resp)))
		})
	}
}
