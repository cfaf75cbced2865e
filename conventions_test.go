package vigil_test

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
)

// The tree's own conventions, as docs/architecture.md states them. These
// tests read the source, not a running bus: a key a package creates is
// checked whether or not anything links that package.

// keyName is the naming rule of every bus event and service key:
// area/verb-or-noun, lowercase, like the log's event types. A family of
// keys (one per tool) is its constant prefix followed by "*".
var (
	keyName   = regexp.MustCompile(`^[a-z][a-z0-9-]*/[a-z][a-z0-9-]*$`)
	keyFamily = regexp.MustCompile(`^[a-z][a-z0-9-]*/\*$`)
)

// keyFuncs are the bus functions that create a key from a name.
var keyFuncs = map[string]string{
	"NewEvent":     "event",
	"NewWaterfall": "waterfall",
	"NewHook":      "hook",
	"NewService":   "service",
	// A service set is the family of the services named prefix+something.
	"NewServiceSet": "service",
}

type key struct {
	name string // the name, or a family's prefix followed by "*"
	kind string
	pos  string
}

// goFiles returns the module's non-test Go files by directory, leaving out
// testdata and hidden directories and node_modules.
func goFiles(t *testing.T) map[string][]string {
	t.Helper()
	byDir := map[string][]string{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			byDir[filepath.Dir(path)] = append(byDir[filepath.Dir(path)], path)
		}
		return nil
	})
	require.NoError(t, err)
	return byDir
}

// modulePath is the import path of the module root.
const modulePath = "github.com/vigil-run/vigil"

// moduleKeys returns every key created in the module's non-test code. A
// name must be a constant (a literal, or a string constant of the same
// package or of a package of this module it imports); a name that ends
// in a non-constant part is a family.
func moduleKeys(t *testing.T) []key {
	t.Helper()
	fset := token.NewFileSet()
	var files []sourceFile
	consts := map[string]map[string]string{} // directory → constant → value
	for dir, paths := range goFiles(t) {
		consts[dir] = map[string]string{}
		for _, p := range paths {
			f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
			require.NoError(t, err)
			files = append(files, sourceFile{dir: dir, ast: f, imports: moduleImports(f)})
			addStringConsts(consts[dir], f)
		}
	}
	var keys []key
	for _, f := range files {
		ast.Inspect(f.ast, func(n ast.Node) bool {
			if k, ok := f.keyOf(n, consts, fset); ok {
				keys = append(keys, k)
			}
			return true
		})
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].name < keys[j].name })
	return keys
}

// sourceFile is a parsed file of the module, with the directories of the
// module's packages it imports, by the names it gives them.
type sourceFile struct {
	dir     string
	ast     *ast.File
	imports map[string]string
}

// addStringConsts adds f's string constants with literal values to consts.
func addStringConsts(consts map[string]string, f *ast.File) {
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					consts[n.Name], _ = strconv.Unquote(lit.Value)
				}
			}
		}
	}
}

// moduleImports maps the names f gives the module's packages to their
// directories.
func moduleImports(f *ast.File) map[string]string {
	imports := map[string]string{}
	for _, spec := range f.Imports {
		path, _ := strconv.Unquote(spec.Path.Value)
		rel, ok := strings.CutPrefix(path, modulePath+"/")
		if !ok {
			continue
		}
		name := filepath.Base(rel)
		if spec.Name != nil {
			name = spec.Name.Name
		}
		imports[name] = filepath.FromSlash(rel)
	}
	return imports
}

// value evaluates a name expression of f: its constant value, with whole
// set when every part of it is constant.
func (f *sourceFile) value(e ast.Expr, consts map[string]map[string]string) (s string, whole bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind == token.STRING {
			s, err := strconv.Unquote(e.Value)
			return s, err == nil
		}
	case *ast.Ident:
		s, ok := consts[f.dir][e.Name]
		return s, ok
	case *ast.SelectorExpr:
		if x, ok := e.X.(*ast.Ident); ok {
			s, ok := consts[f.imports[x.Name]][e.Sel.Name]
			return s, ok
		}
	case *ast.ParenExpr:
		return f.value(e.X, consts)
	case *ast.BinaryExpr:
		if e.Op == token.ADD {
			l, ok := f.value(e.X, consts)
			if !ok {
				return l, false
			}
			r, ok := f.value(e.Y, consts)
			return l + r, ok
		}
	}
	return "", false
}

// busFunc returns the name of the bus function call calls, or "".
func (f *sourceFile) busFunc(call *ast.CallExpr) string {
	fun := call.Fun
	switch x := fun.(type) {
	case *ast.IndexExpr:
		fun = x.X
	case *ast.IndexListExpr:
		fun = x.X
	}
	switch x := fun.(type) {
	case *ast.SelectorExpr:
		if id, ok := x.X.(*ast.Ident); ok && f.imports[id.Name] == "bus" {
			return x.Sel.Name
		}
	case *ast.Ident:
		if f.dir == "bus" {
			return x.Name
		}
	}
	return ""
}

// keyOf returns the key n creates, if n is a call of a bus function that
// makes one.
func (f *sourceFile) keyOf(n ast.Node, consts map[string]map[string]string, fset *token.FileSet) (key, bool) {
	call, ok := n.(*ast.CallExpr)
	if !ok || len(call.Args) != 1 {
		return key{}, false
	}
	name := f.busFunc(call)
	kind, ok := keyFuncs[name]
	if !ok {
		return key{}, false
	}
	s, whole := f.value(call.Args[0], consts)
	if s == "" && !whole && f.dir == "bus" {
		// The bus's own plumbing (ServiceSet.Key) names no key.
		return key{}, false
	}
	if !whole || name == "NewServiceSet" {
		s += "*"
	}
	return key{name: s, kind: kind, pos: fset.Position(call.Pos()).String()}, true
}

func TestEveryBusKeyFollowsTheNamingConvention(t *testing.T) {
	keys := moduleKeys(t)
	require.NotEmpty(t, keys, "the walk found the keys")
	for _, k := range keys {
		t.Logf("%s %s (%s)", k.kind, k.name, k.pos)
		if strings.HasSuffix(k.name, "*") {
			assert.Regexp(t, keyFamily, k.name, "%s: a %s family's constant part is area/ (docs/architecture.md)", k.pos, k.kind)
			continue
		}
		assert.Regexp(t, keyName, k.name, "%s: %s key %q is not area/verb-or-noun, lowercase (docs/architecture.md)", k.pos, k.kind, k.name)
	}
}

// keyTable returns the names in the first column of the key table of
// docs/architecture.md: the rows of the table under the heading that
// names bus events and service keys.
func keyTable(t *testing.T) map[string]bool {
	t.Helper()
	doc, err := os.ReadFile("docs/architecture.md")
	require.NoError(t, err)
	rows := map[string]bool{}
	in := false
	cell := regexp.MustCompile("^\\| `([^`]+)` \\|")
	for _, line := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(line, "#") {
			in = strings.Contains(strings.ToLower(line), "bus events and service keys")
			continue
		}
		if m := cell.FindStringSubmatch(line); in && m != nil {
			rows[m[1]] = true
		}
	}
	return rows
}

func TestTheArchitectureDocumentListsEveryBusKey(t *testing.T) {
	table := keyTable(t)
	require.NotEmpty(t, table, "docs/architecture.md has a table under a heading naming bus events and service keys")
	code := map[string]bool{}
	for _, k := range moduleKeys(t) {
		code[k.name] = true
		assert.True(t, table[k.name], "%s: %s key %q is missing from the table in docs/architecture.md", k.pos, k.kind, k.name)
	}
	for name := range table {
		assert.True(t, code[name], "docs/architecture.md lists %q, which no package creates", name)
	}
}

// docRef matches a path to a Markdown document in text.
var docRef = regexp.MustCompile(`[A-Za-z0-9_./-]*[A-Za-z0-9_-]\.md\b`)

// TestNoFileNamesADocumentTheRepositoryLacks checks that every Markdown
// document a file of the repository names (a README link, a comment
// pointing at docs/…) is in the repository, at the path given from the
// module root or from the naming file's directory. Test files and
// testdata are left out: they name documents they create.
func TestNoFileNamesADocumentTheRepositoryLacks(t *testing.T) {
	exts := map[string]bool{".go": true, ".md": true, ".proto": true, ".yaml": true, ".py": true, ".sh": true, ".js": true, ".html": true}
	var checked int
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !exts[filepath.Ext(path)] || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(data), "\n") {
			for _, loc := range docRef.FindAllStringIndex(line, -1) {
				ref := line[loc[0]:loc[1]]
				if strings.Contains(ref, "//") {
					continue // a URL
				}
				checked++
				_, errRoot := os.Stat(ref)
				_, errHere := os.Stat(filepath.Join(filepath.Dir(path), ref))
				assert.True(t, errRoot == nil || errHere == nil, "%s:%d names %s, which the repository does not contain", path, i+1, ref)
			}
		}
		return nil
	})
	require.NoError(t, err)
	assert.NotZero(t, checked, "the walk met the README's links")
}
