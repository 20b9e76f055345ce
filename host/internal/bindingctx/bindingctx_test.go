package bindingctx

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRead(t *testing.T) {
	tests := []struct {
		name    string
		content *string
		count   int
		err     string
	}{
		{name: "missing file", err: "failed to read binding context: open "},
		{name: "empty", content: ptr(""), count: 0},
		{name: "blank", content: ptr(" \n\t "), count: 0},
		{name: "empty list", content: ptr("[]"), count: 0},
		{name: "two", content: ptr(`[{"binding":"b","type":"Schedule"},{"binding":"b","type":"Event"}]`), count: 2},
		{name: "not json", content: ptr("[{"), err: "failed to parse binding context: "},
		{name: "object", content: ptr(`{"binding":"b"}`), err: "failed to parse binding context: Shell-operator binding context must be a list"},
		{name: "trailing", content: ptr(`[] []`), err: "failed to parse binding context: unexpected data after the top-level value"},
		{name: "item not object", content: ptr(`[{}, 3]`), err: "failed to parse binding context: item 1 is not an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ctx.json")
			if tt.content != nil {
				require.NoError(t, os.WriteFile(path, []byte(*tt.content), 0o600))
			}
			got, err := Read(path)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				assert.True(t, IsError(err))
				return
			}
			require.NoError(t, err)
			assert.Len(t, got, tt.count)
		})
	}
	got, err := Read("")
	require.NoError(t, err)
	assert.Empty(t, got, "an unset BINDING_CONTEXT_PATH means no contexts")
}

func ptr(s string) *string { return &s }

func TestSnapshotItemsUnwrap(t *testing.T) {
	ctxs, err := Parse([]byte(`[{"binding":"w","type":"Schedule","snapshots":{"w":[
		{"object":{"metadata":{"name":"wrapped"}},"filterResult":null},
		{"metadata":{"name":"bare"}},
		{"object":null}]}}]`))
	require.NoError(t, err)
	items, err := FullSnapshot(ctxs, "w")
	require.NoError(t, err)
	assert.Equal(t, []any{
		map[string]any{"metadata": map[string]any{"name": "wrapped"}},
		map[string]any{"metadata": map[string]any{"name": "bare"}},
		nil,
	}, items)
}
