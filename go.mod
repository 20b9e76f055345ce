module github.com/openstack-sync/openstack-sync

go 1.26

require (
	github.com/gophercloud/gophercloud/v2 v2.16.0 // indirect
	github.com/stretchr/testify v1.11.1 // indirect
	github.com/tetratelabs/wazero v1.12.0 // indirect
	go.yaml.in/yaml/v2 v2.4.2 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/time v0.14.0 // indirect
	gopkg.in/evanphx/json-patch.v4 v4.13.0 // indirect
	k8s.io/api v0.34.4 // indirect
	k8s.io/apimachinery v0.34.4 // indirect
	k8s.io/client-go v0.34.4 // indirect
	sigs.k8s.io/yaml v1.6.0 // indirect
)
