package admission

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	if path := os.Getenv(loadChildEnv); path != "" {
		os.Exit(loadChild(path))
	}
	os.Exit(m.Run())
}
