module github.com/openstack-sync/openstack-sync/host/conformance/testdata/guests

go 1.26

require github.com/openstack-sync/openstack-sync/pdk v0.0.0

require github.com/extism/go-pdk v1.1.3 // indirect

replace github.com/openstack-sync/openstack-sync/pdk => ../../../../pdk
