package hook

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/openstack-sync/openstack-sync/host/internal/hookenv"
)

// NewLogger writes to w: text by default, JSON when LOG_TYPE=json (shell-operator's
// LOG_PROXY_HOOK_JSON then forwards each line's fields), at the LOG_LEVEL level.
func NewLogger(lookupEnv hookenv.LookupFunc, w io.Writer) (*slog.Logger, error) {
	level := slog.LevelInfo
	if v, ok := lookupEnv("LOG_LEVEL"); ok && v != "" {
		// Hooks inherit shell-operator's LOG_LEVEL, so every level it accepts must work here too.
		switch strings.ToLower(v) {
		case "trace", "debug":
			level = slog.LevelDebug
		case "info":
			level = slog.LevelInfo
		case "warn", "warning":
			level = slog.LevelWarn
		case "error", "fatal":
			level = slog.LevelError
		default:
			return nil, fmt.Errorf("LOG_LEVEL must be one of trace, debug, info, warn, error, fatal; got %q", v)
		}
	}
	opts := &slog.HandlerOptions{Level: level}
	if t, _ := lookupEnv("LOG_TYPE"); strings.EqualFold(t, "json") {
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return slog.New(slog.NewTextHandler(w, opts)), nil
}
