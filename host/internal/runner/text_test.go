package runner_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/openstack-sync/openstack-sync/host/internal/plugin/plugintest"
	"github.com/openstack-sync/openstack-sync/host/internal/status"
)

// Plugin text reaches the CR's status (printed by kubectl) and the host's log only cleaned and
// bounded (issue 11 item 6).
func TestPluginTextIsCleanedBeforeStatusAndLogs(t *testing.T) {
	e := newEnv(t, false)
	notes := make([]string, 100000)
	for i := range notes {
		notes[i] = fmt.Sprintf("drift %d", i)
	}
	e.plugin.Results = map[string]plugintest.Result{
		"a": {Err: errors.New("quota exceeded\n\x1b[2K\x1b[32mReady: True\x1b[0m\x00")},
		"b": {Notes: notes},
	}
	e.run(e.plan(cr{name: "a"}, cr{name: "b"}))
	assert.Equal(t, "quota exceeded Ready: True", e.status("a")["message"])
	conds := e.status("a")["conditions"].([]any)
	assert.Equal(t, "quota exceeded Ready: True", conds[0].(map[string]any)["message"])
	assert.Contains(t, e.logs.String(), `msg="Failed to reconcile" plugin=widgets kind=Widget cr=ns/a name=a error="quota exceeded Ready: True"`)
	assert.NotContains(t, e.logs.String(), "\x1b")

	msg := e.status("b")["message"].(string)
	assert.LessOrEqual(t, len(msg), status.MaxMessage)
	for _, line := range strings.Split(e.logs.String(), "\n") {
		assert.LessOrEqual(t, len(line), status.MaxNotesBytes+1024, "no log line carries all the notes")
	}
	assert.Contains(t, e.logs.String(), fmt.Sprintf("(%d more notes not shown)", 100000-status.MaxNotes))
}
