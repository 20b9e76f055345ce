package hook

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewLogger(t *testing.T) {
	tests := []struct {
		level, logType string
		want           slog.Level
		json           bool
		err            string
	}{
		{want: slog.LevelInfo},
		{level: "DEBUG", want: slog.LevelDebug},
		{level: "trace", want: slog.LevelDebug},
		{level: "Info", want: slog.LevelInfo},
		{level: "warning", want: slog.LevelWarn},
		{level: "warn", want: slog.LevelWarn},
		{level: "error", want: slog.LevelError},
		{level: "fatal", want: slog.LevelError},
		{level: "verbose", err: `LOG_LEVEL must be one of trace, debug, info, warn, error, fatal; got "verbose"`},
		{logType: "json", want: slog.LevelInfo, json: true},
		{logType: "JSON", want: slog.LevelInfo, json: true},
		{logType: "color", want: slog.LevelInfo},
	}
	for _, tt := range tests {
		t.Run(tt.level+"/"+tt.logType, func(t *testing.T) {
			env := map[string]string{"LOG_LEVEL": tt.level, "LOG_TYPE": tt.logType}
			var buf bytes.Buffer
			log, err := NewLogger(func(k string) (string, bool) { v, ok := env[k]; return v, ok && v != "" }, &buf)
			if tt.err != "" {
				assert.EqualError(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			ctx := context.Background()
			assert.True(t, log.Enabled(ctx, tt.want))
			assert.False(t, log.Enabled(ctx, tt.want-1))
			log.Log(ctx, tt.want, "hello")
			var rec map[string]any
			assert.Equal(t, tt.json, json.Unmarshal(buf.Bytes(), &rec) == nil, buf.String())
		})
	}
}
