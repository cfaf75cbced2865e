package server

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// openAPIDoc is what the tests read of openapi.json.
type openAPIDoc struct {
	OpenAPI string                                 `json:"openapi"`
	Paths   map[string]map[string]openAPIOperation `json:"paths"`
	Comp    struct {
		Schemas map[string]struct {
			Properties map[string]struct {
				Enum []string `json:"enum"`
			} `json:"properties"`
		} `json:"schemas"`
	} `json:"components"`
}

type openAPIOperation struct {
	OperationID string                     `json:"operationId"`
	Responses   map[string]json.RawMessage `json:"responses"`
}

func readOpenAPI(t *testing.T) openAPIDoc {
	t.Helper()
	var doc openAPIDoc
	require.NoError(t, json.Unmarshal(openAPI, &doc))
	require.Equal(t, "3.1.0", doc.OpenAPI)
	return doc
}

// The OpenAPI document names exactly the routes the server serves (and
// those of the contract other branches build), each operation with a
// unique operationId, for generated clients to name their functions by,
// and its 4xx answers.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	doc := readOpenAPI(t)
	var documented, served []string
	ids := map[string]string{}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			route := strings.ToUpper(method) + " " + path
			documented = append(documented, route)
			if assert.NotEmpty(t, op.OperationID, "%s has no operationId", route) {
				assert.NotContains(t, ids, op.OperationID, "%s and %s share an operationId", route, ids[op.OperationID])
				ids[op.OperationID] = route
			}
			has4xx := slices.ContainsFunc(slices.Collect(maps.Keys(op.Responses)), func(s string) bool { return strings.HasPrefix(s, "4") })
			assert.True(t, has4xx, "%s documents no 4xx answer", route)
			assert.Contains(t, op.Responses, "default", "%s documents no default (error) answer", route)
		}
	}
	for _, r := range (&Server{}).routes() {
		served = append(served, r.pattern)
	}
	assertDocumented(t, documented, served)
}

// assertDocumented checks that documented holds exactly what the server
// has.
func assertDocumented(t *testing.T, documented, has []string) {
	t.Helper()
	assert.Equal(t, slices.Sorted(slices.Values(has)), slices.Sorted(slices.Values(documented)))
}

// The error codes the document names are exactly the server's Code
// constants: a client can switch over them exhaustively.
func TestOpenAPINamesEveryErrorCode(t *testing.T) {
	doc := readOpenAPI(t)
	documented := doc.Comp.Schemas["ApiError"].Properties["code"].Enum
	require.NotEmpty(t, documented)
	defined := serverCodes(t)
	require.Contains(t, defined, CodeNotFound, "the parser found the Code constants")
	assertDocumented(t, documented, defined)
}

// serverCodes returns the values of the package's string constants named
// Code…, from its source: a code another file adds is found too.
func serverCodes(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	var codes []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					lit, ok := valueAt(vs, i).(*ast.BasicLit)
					if !strings.HasPrefix(n.Name, "Code") || !ok || lit.Kind != token.STRING {
						continue
					}
					v, err := strconv.Unquote(lit.Value)
					require.NoError(t, err)
					codes = append(codes, v)
				}
			}
		}
	}
	return codes
}

func valueAt(vs *ast.ValueSpec, i int) ast.Expr {
	if i < len(vs.Values) {
		return vs.Values[i]
	}
	return nil
}
