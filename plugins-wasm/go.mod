module github.com/openstack-sync/openstack-sync/plugins-wasm

go 1.26

require github.com/extism/go-pdk v1.1.3 // indirect

require (
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)

require (
	github.com/openstack-sync/openstack-sync/pdk v0.0.0-00010101000000-000000000000
	github.com/stretchr/testify v1.11.1
)

replace github.com/openstack-sync/openstack-sync/pdk => ../pdk
