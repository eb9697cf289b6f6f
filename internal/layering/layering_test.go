package layering

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/architecture.md's layering table from arrows")

// root is the repository root, from this package's folder.
const root = "../.."

// listed is what `go list -deps -json` says of one package.
type listed struct {
	ImportPath string
	Imports    []string
	Module     *struct{ Path string }
}

// graph is the import graph of the module's packages and everything they
// link, with the module's own path.
type graph struct {
	module  string
	imports map[string][]string
	own     []string // the module's packages, relative to it
}

func readGraph(t *testing.T) graph {
	t.Helper()
	mod, err := exec.Command("go", "list", "-m").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	cmd := exec.Command("go", "list", "-deps", "-json", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps -json ./...: %v\n%s", err, stderr.Bytes())
	}
	g := graph{module: strings.TrimSpace(string(mod)), imports: map[string][]string{}}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("reading go list's answer: %v", err)
		}
		g.imports[p.ImportPath] = p.Imports
		if p.Module != nil && p.Module.Path == g.module {
			g.own = append(g.own, g.rel(p.ImportPath))
		}
	}
	if len(g.own) == 0 {
		t.Fatal("go list names no package of the module")
	}
	return g
}

// rel is path relative to the module, or path itself outside it.
func (g graph) rel(path string) string {
	if path == g.module {
		return "."
	}
	return strings.TrimPrefix(path, g.module+"/")
}

// abs is the import path of a table entry: the module's when it has no dot.
func (g graph) abs(p string) string {
	if strings.Contains(strings.SplitN(p, "/", 2)[0], ".") {
		return p
	}
	return g.module + "/" + p
}

// chainTo is the shortest chain of imports from pkg to a package that
// match accepts, or nil when there is none.
func (g graph) chainTo(pkg string, match func(string) bool) []string {
	prev := map[string]string{pkg: ""}
	queue := []string{pkg}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p != pkg && match(p) {
			var chain []string
			for ; p != ""; p = prev[p] {
				chain = append(chain, g.rel(p))
			}
			slices.Reverse(chain)
			return chain
		}
		for _, q := range g.imports[p] {
			if _, seen := prev[q]; !seen {
				prev[q] = p
				queue = append(queue, q)
			}
		}
	}
	return nil
}

// allowed reports whether row a allows importing path: a package of the
// module that the row names, a package of an engine's own module under a
// path the row names, or anything else outside the module.
func (g graph) allowed(a arrow, path string) bool {
	if under(path, g.module) {
		return slices.Contains(a.imports, g.rel(path))
	}
	if !g.ofEngine(path) {
		return true
	}
	return slices.ContainsFunc(a.imports, func(tree string) bool { return under(path, g.abs(tree)) })
}

// ofEngine reports whether path, outside the module, belongs to an engine.
func (g graph) ofEngine(path string) bool {
	for _, e := range engines {
		for _, tree := range e.paths {
			if strings.Contains(tree, ".") && under(path, tree) {
				return true
			}
		}
	}
	return false
}

func under(path, tree string) bool { return path == tree || strings.HasPrefix(path, tree+"/") }

// Every package of the module is in the table, every row names a package
// that exists, and every import between the module's packages is an arrow
// the table allows.
func TestEveryImportIsAnArrowOfTheTable(t *testing.T) {
	g := readGraph(t)
	rows := map[string]arrow{}
	for _, a := range arrows {
		if _, dup := rows[a.pkg]; dup {
			t.Errorf("arrows lists %s twice", a.pkg)
		}
		rows[a.pkg] = a
	}
	for _, p := range g.own {
		a, ok := rows[p]
		if !ok {
			t.Errorf("%s is not in the table (internal/layering/arrows.go): add its row with the packages it may import", p)
			continue
		}
		delete(rows, p)
		for _, imp := range g.imports[g.abs(p)] {
			if !g.allowed(a, imp) {
				t.Errorf("%s imports %s, an arrow the table does not allow (internal/layering/arrows.go)", p, g.rel(imp))
			}
		}
	}
	for p := range rows {
		t.Errorf("the table lists %s, which go list does not know: remove its row", p)
	}
}

// A leaf links none of the engines, through any chain of imports.
func TestLeavesLinkNoEngine(t *testing.T) {
	g := readGraph(t)
	for _, a := range arrows {
		if !a.leaf {
			continue
		}
		for _, e := range engines {
			match := func(path string) bool {
				return slices.ContainsFunc(e.paths, func(tree string) bool { return under(path, g.abs(tree)) })
			}
			if chain := g.chainTo(g.abs(a.pkg), match); chain != nil {
				t.Errorf("%s links %s: %s", a.pkg, e.name, strings.Join(chain, " -> "))
			}
		}
	}
}

// The layering section of docs/architecture.md is the table's.
func TestArchitectureShowsTheTable(t *testing.T) {
	const begin, end = "<!-- layering table: generated by internal/layering from arrows.go -->\n", "<!-- end of the layering table -->\n"
	path := filepath.Join(root, "docs", "architecture.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i, j := bytes.Index(doc, []byte(begin)), bytes.Index(doc, []byte(end))
	if i < 0 || j < i {
		t.Fatalf("%s has no layering table between %q and %q", path, begin, end)
	}
	want := markdown()
	if got := string(doc[i+len(begin) : j]); got != want {
		if *update {
			out := slices.Concat(doc[:i+len(begin)], []byte(want), doc[j:])
			if err := os.WriteFile(path, out, 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("%s's layering table is not the one of internal/layering/arrows.go: run go test ./internal/layering -update\n got:\n%s\nwant:\n%s", path, got, want)
	}
}

// markdown renders the table as docs/architecture.md shows it.
func markdown() string {
	var b strings.Builder
	b.WriteString("| package | may import | links no engine |\n|---|---|---|\n")
	for _, a := range arrows {
		imports := "nothing"
		if len(a.imports) > 0 {
			imports = "`" + strings.Join(a.imports, "`, `") + "`"
		}
		leaf := ""
		if a.leaf {
			leaf = "yes"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", a.pkg, imports, leaf)
	}
	return b.String()
}
