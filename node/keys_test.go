package node

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/config"
)

// TestKeyNamedInOneFile is the grep-level check of one row per key: no
// key of the rows (core/server's broker keys, node's) appears as a string
// literal in more than one non-test Go file of the repository. Code that
// needs a key's name uses the constant its row's file exports.
func TestKeyNamedInOneFile(t *testing.T) {
	names := map[string]bool{}
	for _, r := range allRows() {
		// A broker key named as its topic config (min.insync.replicas) is
		// named wherever that topic config is: the topic key's uses.
		if _, topic := config.TopicRow(r.Name); !topic {
			names[r.Name] = true
		}
	}
	files := map[string][]string{} // key -> files naming it
	fset := token.NewFileSet()
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != ".." && (strings.HasPrefix(n, ".") || n == "testdata" || n == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err == nil && names[s] && !slices.Contains(files[s], path) {
				files[s] = append(files[s], path)
			}
			return true
		})
		return nil
	})
	require.NoError(t, err)
	for _, r := range allRows() {
		if len(files[r.Name]) > 1 {
			t.Errorf("%s is named in %d files: %v", r.Name, len(files[r.Name]), files[r.Name])
		}
	}
}
