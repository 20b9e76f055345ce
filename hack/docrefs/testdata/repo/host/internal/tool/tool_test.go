package tool

import "testing"

func TestTool(t *testing.T) {}
