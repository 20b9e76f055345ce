package wasm

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The CR's status goes to every plugin (docs/abi.md), except one that declared skip_status:
// decoding a status it never reads cost a converged CR's guest much of its input work.
func TestStatusIsSentUnlessThePluginSkipsIt(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		guest, mode string
		want        string
	}{
		{guest: "pdkmock", mode: "action", want: "status: map[syncStatus:Synced]"},
		{guest: "rawmock", mode: "mode", want: "status sent: false"},
	} {
		t.Run(c.guest, func(t *testing.T) {
			o, _ := testOptions(t)
			p := loadTest(t, guest(t, c.guest), o)
			req := crRequest("a", map[string]any{c.mode: "report-status"})
			req.Status = map[string]any{"syncStatus": "Synced"}
			res, err := p.Reconcile(ctx, &fakeSession{}, nil, req)
			require.NoError(t, err)
			assert.Equal(t, []string{c.want}, res.Notes)
		})
	}
}
