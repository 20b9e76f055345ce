// Command docrefs fails when the documentation names something the repository no longer has: a
// repository path (`host/internal/kube`, a relative link), a `make` target, or a flag of the
// openstack-sync commands. `make lint` runs it from the repository root:
//
//	go run ./hack/docrefs
//
// It reads README.md, DEVELOPERS.md, RATIONALE.md and every Markdown file under docs/: the text of
// backtick spans and code blocks, and the targets of relative links. A path is checked when it
// starts with a top-level folder or file of the repository; one with a placeholder (`<name>`, `*`,
// `$VAR`) is checked up to the placeholder. Build outputs (bin/, .cache/) are not checked. A line
// that names something on purpose that does not exist (a tag, a flag not built yet) ends with the
// comment <!-- docrefs: ignore -->.
//
// A test cited as `pkg: TestName` (docs/contract.md names the test pinning each rule) must exist:
// pkg is a folder under host/internal/ or under the repository root, and one of its _test.go files
// must declare func TestName (or FuzzName).
package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
)

func main() {
	problems, err := check(".")
	if err != nil {
		fmt.Fprintln(os.Stderr, "docrefs:", err)
		os.Exit(2)
	}
	for _, p := range problems {
		fmt.Println(p)
	}
	if len(problems) > 0 {
		fmt.Printf("docrefs: %d stale reference(s) in the documentation\n", len(problems))
		os.Exit(1)
	}
}

// ignoreMarker ends a line whose references are deliberate.
const ignoreMarker = "<!-- docrefs: ignore -->"

// outputs are folders the build creates; the docs may name what will be in them.
var outputs = []string{"bin", ".cache"}

var (
	backtick  = regexp.MustCompile("`([^`\n]+)`")
	link      = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	makeCall  = regexp.MustCompile(`(?:^|[\s(])make ([a-z0-9][a-z0-9-]*)`)
	target    = regexp.MustCompile(`(?m)^([a-z0-9][a-z0-9-]*):`)
	flagUse   = regexp.MustCompile(`(?:^|\s)(--[a-z][a-z0-9-]*)`)
	testRef   = regexp.MustCompile("`([a-z][a-z0-9/]*): ((?:Test|Fuzz)[A-Za-z0-9_]+)")
	flagDef   = regexp.MustCompile(`\.(?:String|Bool|Int|Duration|Float64|Var|StringVar|BoolVar|IntVar|DurationVar|Float64Var|Func)\([^"]*"([a-z][a-z0-9-]*)"`)
	ourBinary = regexp.MustCompile(`(?:^|[\s/])openstack-sync(?:-dev)? `)
)

// check returns one line per stale reference found in the documents under root.
func check(root string) ([]string, error) {
	docs, err := documents(root)
	if err != nil {
		return nil, err
	}
	tops, err := topLevel(root)
	if err != nil {
		return nil, err
	}
	targets, err := makeTargets(root)
	if err != nil {
		return nil, err
	}
	flags, err := commandFlags(root)
	if err != nil {
		return nil, err
	}
	var problems []string
	for _, doc := range docs {
		data, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			return nil, err
		}
		for i, line := range codeLines(string(data)) {
			if line.text == "" || strings.Contains(line.text, ignoreMarker) {
				continue
			}
			where := fmt.Sprintf("%s:%d", doc, i+1)
			for _, span := range line.spans {
				for _, tok := range strings.Fields(span) {
					if p, ok := repoPath(tok, tops); ok && !exists(root, p, "") && !exists(root, p, filepath.Dir(doc)) {
						problems = append(problems, fmt.Sprintf("%s: path %s does not exist", where, p))
					}
				}
				for _, m := range makeCall.FindAllStringSubmatch(span, -1) {
					if !targets[m[1]] {
						problems = append(problems, fmt.Sprintf("%s: make target %q does not exist", where, m[1]))
					}
				}
				if ourBinary.MatchString(" " + span) {
					for _, m := range flagUse.FindAllStringSubmatch(span, -1) {
						if name := strings.TrimPrefix(m[1], "--"); !flags[name] {
							problems = append(problems, fmt.Sprintf("%s: flag %s is defined by no openstack-sync command", where, m[1]))
						}
					}
				}
			}
			for _, m := range testRef.FindAllStringSubmatch(line.text, -1) {
				if problem := checkTest(root, m[1], m[2]); problem != "" {
					problems = append(problems, where+": "+problem)
				}
			}
			for _, m := range link.FindAllStringSubmatch(backtick.ReplaceAllString(line.text, ""), -1) {
				p, ok := linkPath(m[1])
				if ok && !exists(root, p, filepath.Dir(doc)) {
					problems = append(problems, fmt.Sprintf("%s: link %s does not exist", where, m[1]))
				}
			}
		}
	}
	return problems, nil
}

type line struct {
	text  string
	spans []string // backtick spans, or the whole line inside a code block
}

// codeLines splits a Markdown text into lines with the code each holds.
func codeLines(text string) []line {
	var out []line
	inBlock := false
	for _, l := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(l)
		if strings.HasPrefix(trimmed, "```") {
			inBlock = !inBlock
			out = append(out, line{})
			continue
		}
		if inBlock {
			out = append(out, line{text: l, spans: []string{l}})
			continue
		}
		var spans []string
		for _, m := range backtick.FindAllStringSubmatch(l, -1) {
			spans = append(spans, m[1])
		}
		out = append(out, line{text: l, spans: spans})
	}
	return out
}

// repoPath reports whether tok names something in the repository, and the part to check.
func repoPath(tok string, tops map[string]bool) (string, bool) {
	tok = strings.TrimRight(strings.TrimLeft(tok, `"'(`), `"'),;:.`)
	tok = strings.TrimPrefix(tok, "./")
	if i := strings.IndexAny(tok, "<*${["); i >= 0 {
		tok = tok[:i]
		if j := strings.LastIndex(tok, "/"); j >= 0 {
			tok = tok[:j]
		} else {
			return "", false
		}
	}
	first, _, nested := strings.Cut(tok, "/")
	if !nested || strings.Contains(tok, "//") || !tops[first] || slices.Contains(outputs, first) {
		return "", false
	}
	return strings.TrimSuffix(tok, "/"), true
}

// linkPath returns the file a relative Markdown link names, without its #fragment.
func linkPath(target string) (string, bool) {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
		return "", false
	}
	target, _, _ = strings.Cut(target, "#")
	return target, target != ""
}

// checkTest says what is wrong with a cited test, or "" when pkg declares it.
func checkTest(root, pkg, name string) string {
	dir := ""
	for _, d := range []string{filepath.Join("host", "internal", pkg), pkg} {
		if fi, err := os.Stat(filepath.Join(root, d)); err == nil && fi.IsDir() {
			dir = d
			break
		}
	}
	if dir == "" {
		return fmt.Sprintf("test %s: no package %s", name, pkg)
	}
	files, _ := filepath.Glob(filepath.Join(root, dir, "*_test.go"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err == nil && strings.Contains(string(data), "func "+name+"(") {
			return ""
		}
	}
	return fmt.Sprintf("test %s: %s declares no such test", name, filepath.ToSlash(dir))
}

func exists(root, p, dir string) bool {
	_, err := os.Stat(filepath.Join(root, dir, filepath.FromSlash(p)))
	return err == nil
}

// documents are the Markdown files a reader of the repository follows.
func documents(root string) ([]string, error) {
	docs := []string{}
	for _, f := range []string{"README.md", "DEVELOPERS.md", "RATIONALE.md"} {
		if _, err := os.Stat(filepath.Join(root, f)); err == nil {
			docs = append(docs, f)
		}
	}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			docs = append(docs, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(docs)
	return docs, err
}

func topLevel(root string) (map[string]bool, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	tops := map[string]bool{}
	for _, e := range entries {
		if e.Name() != ".git" {
			tops[e.Name()] = true
		}
	}
	for _, o := range outputs {
		tops[o] = true
	}
	return tops, nil
}

func makeTargets(root string) (map[string]bool, error) {
	data, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		return nil, err
	}
	targets := map[string]bool{}
	for _, m := range target.FindAllStringSubmatch(string(data), -1) {
		targets[m[1]] = true
	}
	return targets, nil
}

// commandFlags are the flag names the host's commands define (host/, non-test Go files).
func commandFlags(root string) (map[string]bool, error) {
	flags := map[string]bool{}
	err := filepath.WalkDir(filepath.Join(root, "host"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range flagDef.FindAllStringSubmatch(string(data), -1) {
			flags[m[1]] = true
		}
		return nil
	})
	return flags, err
}
