package runner

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/metrics"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

type plainSession struct{}

func (plainSession) Do(context.Context, plugin.Request) (*plugin.Response, error) {
	return &plugin.Response{StatusCode: 204}, nil
}

type sourcedSession struct {
	plainSession
	sent []string
}

func (s *sourcedSession) DoSource(_ context.Context, req plugin.SourceRequest) (*plugin.Response, error) {
	s.sent = append(s.sent, req.Source+" "+req.Path)
	return &plugin.Response{StatusCode: 200}, nil
}

// A prune or a per-CR delete gets its group's session through the deletion counter when the run
// has metrics or Events; a session that reaches sources must still reach them through it, or the
// plugin is told the operator allows no source (docs/abi.md, "source_request").
func TestTheDeletionCounterKeepsASessionsSources(t *testing.T) {
	for name, rn := range map[string]*Runner{"observed": {Metrics: metrics.NewFile()}, "not observed": {}} {
		t.Run(name, func(t *testing.T) {
			src := &sourcedSession{}
			s := rn.countDeletions(src).session()
			sender, ok := s.(plugin.SourceSender)
			require.True(t, ok, "the plugin's session reaches sources")
			_, err := sender.DoSource(context.Background(), plugin.SourceRequest{Source: "nautobot", Path: "api/ipam/prefixes/"})
			require.NoError(t, err)
			assert.Equal(t, []string{"nautobot api/ipam/prefixes/"}, src.sent)

			_, ok = rn.countDeletions(plainSession{}).session().(plugin.SourceSender)
			assert.False(t, ok, "a session without sources gains none")

			// A per-CR delete counts its own deletions over the group's session, as Delete gets it.
			own := &crDeletes{Session: s}
			_, ok = keepSources(own, own.Session).(plugin.SourceSender)
			assert.True(t, ok, "a per-CR delete's session reaches sources")
		})
	}
}
