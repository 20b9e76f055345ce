// Package memotest is the pdktest side of experimental.Unchanged, the convergence memo's question:
// a test decides what a pdktest host answers. It is experimental, as package experimental is: it
// goes or changes with the memo. pdktest keeps what every plugin using the memo needs in its
// stable API (Host.Evidence, RequireCompleteEvidence); a host made by pdktest.New never reports a
// hit unless a test calls Answer.
package memotest

import (
	"github.com/openstack-sync/openstack-sync/pdk/internal/testhook"
	"github.com/openstack-sync/openstack-sync/pdk/pdktest"
)

// Answer makes h answer experimental.Unchanged with answer (nil: never a hit, the default), given
// the evidence of the call; h keeps every call's evidence for Host.Evidence either way.
func Answer(h *pdktest.Host, answer func(evidence [][]byte) bool) { testhook.SetMemo(h, answer) }
