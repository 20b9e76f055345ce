package openstack

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/openstack-sync/openstack-sync/host/internal/fakecloud"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

// BenchmarkSessionDo measures one proxied GET against the in-process cloud over loopback:
// validation, catalog lookup, token, HTTP round trip and the bounded read.
func BenchmarkSessionDo(b *testing.B) {
	cloud := fakecloud.New(fakecloud.Options{})
	defer cloud.Close()
	sec := &secrets{data: map[string]map[string][]byte{"ns1/creds": {"clouds.yaml": []byte(cloud.CloudsYAML())}}}
	s, err := NewConnector(sec, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}).Connect(context.Background(), testCreds)
	if err != nil {
		b.Fatal(err)
	}
	req := plugin.Request{Service: "network", Method: http.MethodGet, Path: "v2.0/flavors"}
	if _, err := s.Do(context.Background(), req); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		resp, err := s.Do(context.Background(), req)
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatal(err, resp)
		}
	}
}

// BenchmarkPrepare measures request validation alone (path, headers, microversion).
func BenchmarkPrepare(b *testing.B) {
	req := plugin.Request{Service: "baremetal", Method: http.MethodPatch, Path: "v1/runbooks/CUSTOM_A",
		Microversion: "1.96", Header: http.Header{"X-Request-Label": {"x"}}, Body: []byte(`[]`)}
	for b.Loop() {
		if _, err := prepare(req); err != nil {
			b.Fatal(err)
		}
	}
}
