package pdktest

import "github.com/openstack-sync/openstack-sync/pdk"

// Backend is what a Context talks to: the methods of the PDK's host boundary. *Host and
// bench.Replay (pdk/experimental/bench) are Backends.
type Backend interface {
	Config(key string) (string, bool)
	Log(level pdk.LogLevel, msg string)
	OpenStack(req *pdk.Request) (*pdk.Response, error)
}
