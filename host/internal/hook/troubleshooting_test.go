package hook_test

// This file keeps docs/operating.md's troubleshooting table in step with the host: every error and
// warning the host logs has a row (cause and fix), and every row still names a message the host
// can print.

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/runner"
)

const repoRoot = "../../.."

// skipped are the packages whose lines an operator never sees from the hook: test doubles, the
// demo, and the developer and benchmark commands.
var skipped = []string{
	"host/internal/fakecloud", "host/internal/fakekube", "host/internal/demo", "host/internal/plugin/plugintest",
	"host/internal/kube/kubetest", "host/internal/wasm/wasmtest", "host/cmd/openstack-sync-dev",
	"host/cmd/openstack-sync-bench", "host/cmd/openstack-sync-native",
}

var levels = map[string]bool{"Error": true, "Warn": true, "ErrorContext": true, "WarnContext": true}

// logged returns every Error and Warn message of the host's production code, keyed by message,
// with where it is logged. A message built with fmt.Sprintf is keyed by its format.
func logged(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	fset := token.NewFileSet()
	var files []*ast.File
	var paths []string
	err := filepath.WalkDir(filepath.Join(repoRoot, "host"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repoRoot, path)
		if d.IsDir() {
			for _, s := range skipped {
				if rel == s {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		collectConstants(f)
		files, paths = append(files, f), append(paths, rel)
		return nil
	})
	require.NoError(t, err)
	for i, f := range files {
		rel := paths[i]
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !levels[sel.Sel.Name] {
				return true
			}
			arg := call.Args[0]
			if strings.HasSuffix(sel.Sel.Name, "Context") && len(call.Args) > 1 {
				arg = call.Args[1]
			}
			if msg, ok := message(arg); ok {
				out[msg] = rel + ":" + strconv.Itoa(fset.Position(call.Pos()).Line)
			}
			return true
		})
	}
	return out
}

// message is the constant text of a log message: a string literal, a fmt.Sprintf format, or the
// literal start of a concatenation. Anything else (err.Error()) relays a message logged or
// returned elsewhere.
func message(e ast.Expr) (string, bool) {
	switch v := e.(type) {
	case *ast.BasicLit:
		if v.Kind == token.STRING {
			s, err := strconv.Unquote(v.Value)
			return s, err == nil
		}
	case *ast.CallExpr:
		if sel, ok := v.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Sprintf" && len(v.Args) > 0 {
			return message(v.Args[0])
		}
	case *ast.BinaryExpr:
		if v.Op == token.ADD {
			l, ok := message(v.X)
			if !ok {
				return "", false
			}
			if r, ok := constant(v.Y); ok && !strings.HasSuffix(l, "…") {
				return l + r, true
			}
			return strings.TrimSuffix(l, "…") + "…", true
		}
	case *ast.Ident:
		// A named constant (runner.MsgReconcileFailed) is resolved from the package's declarations.
		if s, ok := constants[v.Name]; ok {
			return s, true
		}
	case *ast.SelectorExpr:
		if s, ok := constants[v.Sel.Name]; ok {
			return s, true
		}
	}
	return "", false
}

func constant(e ast.Expr) (string, bool) {
	if v, ok := e.(*ast.BasicLit); ok && v.Kind == token.STRING {
		s, err := strconv.Unquote(v.Value)
		return s, err == nil
	}
	return "", false
}

// constants are the string constants of the host's production code whose name starts with Msg.
var constants = map[string]string{}

func collectConstants(f *ast.File) {
	for _, decl := range f.Decls {
		g, ok := decl.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if i < len(vs.Values) && strings.HasPrefix(n.Name, "Msg") {
					if s, ok := constant(vs.Values[i]); ok {
						constants[n.Name] = s
					}
				}
			}
		}
	}
}

var row = regexp.MustCompile("^\\| `([^`]+)` \\|")

// documented are the messages of the troubleshooting table's rows.
func documented(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "docs/operating.md"))
	require.NoError(t, err)
	_, table, ok := strings.Cut(string(data), "## Troubleshooting")
	require.True(t, ok, "docs/operating.md has a Troubleshooting section")
	var out []string
	for _, line := range strings.Split(table, "\n") {
		if m := row.FindStringSubmatch(line); m != nil {
			out = append(out, m[1])
		}
	}
	return out
}

func TestTroubleshootingTableCoversEveryMessage(t *testing.T) {
	code := logged(t)
	require.Greater(t, len(code), 20, "the walk found the host's log calls")
	// The run's summary lines go through a helper that logs the message it is given.
	for _, m := range []string{runner.MsgSkippingPrune, runner.MsgFinishedWithErrors} {
		code[m] = "host/internal/runner/runner.go (summary)"
	}
	rows := documented(t)
	inTable := map[string]bool{}
	for _, r := range rows {
		inTable[r] = true
	}
	var missing []string
	for msg, where := range code {
		if !inTable[msg] {
			missing = append(missing, "| `"+msg+"` | ... | ... |  <- "+where)
		}
	}
	sort.Strings(missing)
	assert.Empty(t, missing, "messages the host logs that docs/operating.md's troubleshooting table lacks:\n%s",
		strings.Join(missing, "\n"))
	for _, r := range rows {
		_, ok := code[r]
		assert.True(t, ok, "the troubleshooting table names %q, which the host no longer logs", r)
	}
}
