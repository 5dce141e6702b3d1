package detguard

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"slices"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/tools/go/packages"
)

// Finding is one violation of the contract.
type Finding struct {
	Pos  token.Position
	Rule string // short rule name, e.g. "goroutine", "import", "map-range"
	Msg  string
}

func (f Finding) String() string {
	return fmt.Sprintf("%s:%d:%d: [%s] %s", f.Pos.Filename, f.Pos.Line, f.Pos.Column, f.Rule, f.Msg)
}

// forbiddenImports are packages core code must not import at all. A prefix
// ending in "/" forbids the whole tree.
var forbiddenImports = []string{
	"sync", "sync/", "os", "os/", "net", "net/", "crypto/rand", "math/rand",
	"syscall", "io/ioutil", "unsafe", "plugin",
}

// allowedMathRandV2 lists the math/rand/v2 functions that build seeded
// generators; every other package-level function draws from the global,
// randomly seeded source.
var allowedMathRandV2 = map[string]bool{
	"New": true, "NewPCG": true, "NewChaCha8": true, "NewZipf": true,
}

// forbiddenTime lists time functions that read or wait on the wall clock.
var forbiddenTime = map[string]bool{
	"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true,
	"AfterFunc": true, "Tick": true, "NewTimer": true, "NewTicker": true,
}

// sortFuncs are calls that put a slice into a deterministic order.
var sortFuncs = map[string]map[string]bool{
	"sort":   {"Strings": true, "Ints": true, "Float64s": true, "Slice": true, "SliceStable": true, "Sort": true, "Stable": true},
	"slices": {"Sort": true, "SortFunc": true, "SortStableFunc": true},
}

// mapIterators are the functions of package maps that walk a map in its
// random order (an iter.Seq or iter.Seq2 over its keys, values or pairs).
var mapIterators = map[string]bool{"Keys": true, "Values": true, "All": true}

// sortedCollectors are the slices functions that collect a sequence into a
// sorted slice: a map iterator passed straight to one of them is ordered.
var sortedCollectors = map[string]bool{"Sorted": true, "SortedFunc": true, "SortedStableFunc": true}

const annotation = "//determinism:unordered"

// Check loads the packages matching patterns (relative to dir) with type
// information and returns every finding in non-test files, sorted by
// position.
func Check(dir string, patterns ...string) ([]Finding, error) {
	cfg := &packages.Config{
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax |
			packages.NeedTypes | packages.NeedTypesInfo | packages.NeedImports,
		Dir: dir,
	}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		return nil, fmt.Errorf("load %v: %w", patterns, err)
	}
	var out []Finding
	var loadErrs []string
	for _, p := range pkgs {
		for _, e := range p.Errors {
			loadErrs = append(loadErrs, e.Error())
		}
		for _, f := range p.Syntax {
			name := p.Fset.Position(f.Pos()).Filename
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			out = append(out, checkFile(p.Fset, f, p.TypesInfo)...)
		}
	}
	if len(loadErrs) > 0 {
		return nil, fmt.Errorf("packages did not type-check: %s", strings.Join(loadErrs, "; "))
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Pos, out[j].Pos
		if a.Filename != b.Filename {
			return a.Filename < b.Filename
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
	return out, nil
}

type checker struct {
	fset     *token.FileSet
	info     *types.Info
	file     *ast.File
	lines    map[int]string // line -> annotation text on that line
	findings []Finding
	// sortedIters are map iterator calls passed straight to a sorted
	// collector (seen before the iterator call itself is visited).
	sortedIters []*ast.CallExpr
}

func checkFile(fset *token.FileSet, f *ast.File, info *types.Info) []Finding {
	c := &checker{fset: fset, info: info, file: f, lines: map[int]string{}}
	for _, cg := range f.Comments {
		for _, cm := range cg.List {
			if strings.HasPrefix(cm.Text, annotation) {
				c.lines[fset.Position(cm.Slash).Line] = strings.TrimSpace(strings.TrimPrefix(cm.Text, annotation))
			}
		}
	}
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		for _, bad := range forbiddenImports {
			if path == bad || (strings.HasSuffix(bad, "/") && strings.HasPrefix(path, bad)) {
				c.add(imp.Pos(), "import", fmt.Sprintf("import of %q is forbidden in deterministic code", path))
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			c.add(n.Pos(), "goroutine", "go statement")
		case *ast.SelectStmt:
			c.add(n.Pos(), "channel", "select statement")
		case *ast.SendStmt:
			c.add(n.Pos(), "channel", "channel send")
		case *ast.UnaryExpr:
			if n.Op == token.ARROW {
				c.add(n.Pos(), "channel", "channel receive")
			}
		case *ast.ChanType:
			c.add(n.Pos(), "channel", "channel type")
		case *ast.SelectorExpr:
			c.checkSelector(n)
		case *ast.CallExpr:
			if c.isSortedCollector(n) {
				// slices.Sorted(maps.Keys(m)): the iterator's order is
				// sorted away (the outer call is visited first).
				for _, a := range n.Args {
					if inner, ok := a.(*ast.CallExpr); ok && c.isMapIterator(inner) {
						c.sortedIters = append(c.sortedIters, inner)
					}
				}
			}
			if c.isMapIterator(n) && !slices.Contains(c.sortedIters, n) {
				line := c.fset.Position(n.Pos()).Line
				if reason, ok := c.annotated(line); !ok || reason == "" {
					c.add(n.Pos(), "map-iter", "maps."+n.Fun.(*ast.SelectorExpr).Sel.Name+
						" walks a map in random order: collect with slices.Sorted, or annotate //determinism:unordered <why order cannot matter>")
				}
			}
		case *ast.FuncDecl:
			if n.Body != nil {
				c.checkMapRanges(n.Body)
			}
		case *ast.FuncLit:
			// Map ranges inside closures are checked with the closure as
			// the function that must sort.
			c.checkMapRanges(n.Body)
			return true
		}
		return true
	})
	return c.findings
}

func (c *checker) add(pos token.Pos, rule, msg string) {
	c.findings = append(c.findings, Finding{Pos: c.fset.Position(pos), Rule: rule, Msg: msg})
}

// checkSelector flags pkg.Func uses of the wall clock and global randomness.
func (c *checker) checkSelector(sel *ast.SelectorExpr) {
	id, ok := sel.X.(*ast.Ident)
	if !ok {
		return
	}
	pn, ok := c.info.Uses[id].(*types.PkgName)
	if !ok {
		return
	}
	path := pn.Imported().Path()
	name := sel.Sel.Name
	switch {
	case path == "time" && forbiddenTime[name]:
		c.add(sel.Pos(), "wall-clock", "time."+name+" reads or waits on the wall clock; use env.Env")
	case path == "math/rand/v2" && !allowedMathRandV2[name]:
		if _, isFunc := c.info.Uses[sel.Sel].(*types.Func); isFunc {
			c.add(sel.Pos(), "randomness", "math/rand/v2."+name+" uses the global source; use env.Env.Rand")
		}
	}
}

// checkMapRanges finds range loops over maps directly inside body (not
// inside nested function literals, which are visited on their own).
func (c *checker) checkMapRanges(body *ast.BlockStmt) {
	ast.Inspect(body, func(n ast.Node) bool {
		if _, ok := n.(*ast.FuncLit); ok {
			return false
		}
		rs, ok := n.(*ast.RangeStmt)
		if !ok {
			return true
		}
		t := c.info.TypeOf(rs.X)
		if t == nil {
			return true
		}
		if _, isMap := t.Underlying().(*types.Map); !isMap {
			return true
		}
		line := c.fset.Position(rs.Pos()).Line
		if reason, ok := c.annotated(line); ok {
			switch {
			case reason == "":
				c.add(rs.Pos(), "map-range", "determinism:unordered annotation needs a reason")
			case claimsSorted(reason) && !c.collectsThenSorts(rs, body):
				// A reason that says the result is sorted is checked,
				// not trusted: the loop must only collect into slices
				// that are sorted after it.
				c.add(rs.Pos(), "map-range", "the annotation says the keys are sorted, but the loop does more than append to slices sorted after it")
			}
			return true
		}
		if c.collectsThenSorts(rs, body) {
			return true
		}
		c.add(rs.Pos(), "map-range", "range over a map: sort the keys first, or annotate //determinism:unordered <why order cannot matter>")
		return true
	})
}

// claimsSorted reports whether an annotation's reason rests on a sort
// ("sorted below", "sorted after the loop").
func claimsSorted(reason string) bool {
	return strings.Contains(strings.ToLower(reason), "sorted")
}

// isMapIterator reports whether call is maps.Keys, maps.Values or
// maps.All.
func (c *checker) isMapIterator(call *ast.CallExpr) bool {
	return c.isPkgFunc(call, "maps", mapIterators)
}

// isSortedCollector reports whether call is slices.Sorted (or its Func
// variants).
func (c *checker) isSortedCollector(call *ast.CallExpr) bool {
	return c.isPkgFunc(call, "slices", sortedCollectors)
}

func (c *checker) isPkgFunc(call *ast.CallExpr, path string, names map[string]bool) bool {
	p, name, ok := c.pkgFunc(call)
	return ok && p == path && names[name]
}

// pkgFunc is the import path and the name of the package-level function
// that call calls as pkg.Name(...), if it calls one.
func (c *checker) pkgFunc(call *ast.CallExpr) (path, name string, ok bool) {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return "", "", false
	}
	id, ok := sel.X.(*ast.Ident)
	if !ok {
		return "", "", false
	}
	pn, ok := c.info.Uses[id].(*types.PkgName)
	if !ok {
		return "", "", false
	}
	return pn.Imported().Path(), sel.Sel.Name, true
}

func (c *checker) annotated(line int) (string, bool) {
	if r, ok := c.lines[line]; ok {
		return r, true
	}
	r, ok := c.lines[line-1]
	return r, ok
}

// collectsThenSorts reports whether every statement of the loop body is
// `s = append(s, ...)`, or an if (without an init statement, with a
// condition that calls no function) whose branches hold only such
// statements, and every such s is passed to a sort function after the
// loop, within body.
func (c *checker) collectsThenSorts(rs *ast.RangeStmt, body *ast.BlockStmt) bool {
	var targets []types.Object
	if !c.onlyAppends(rs.Body.List, &targets) {
		return false
	}
	for _, obj := range targets {
		if !c.sortedAfter(obj, rs.End(), body) {
			return false
		}
	}
	return true
}

// onlyAppends checks the statements of collectsThenSorts' rule and adds
// the slices appended to to targets.
func (c *checker) onlyAppends(list []ast.Stmt, targets *[]types.Object) bool {
	for _, st := range list {
		switch st := st.(type) {
		case *ast.IfStmt:
			if st.Init != nil || callsFunction(st.Cond) || !c.onlyAppends(st.Body.List, targets) {
				return false
			}
			switch e := st.Else.(type) {
			case nil:
			case *ast.BlockStmt:
				if !c.onlyAppends(e.List, targets) {
					return false
				}
			default:
				return false
			}
		case *ast.AssignStmt:
			if len(st.Lhs) != 1 || len(st.Rhs) != 1 {
				return false
			}
			lhs, ok := st.Lhs[0].(*ast.Ident)
			if !ok {
				return false
			}
			call, ok := st.Rhs[0].(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return false
			}
			if fn, ok := call.Fun.(*ast.Ident); !ok || fn.Name != "append" {
				return false
			}
			if first, ok := call.Args[0].(*ast.Ident); !ok || c.info.ObjectOf(first) != c.info.ObjectOf(lhs) {
				return false
			}
			*targets = append(*targets, c.info.ObjectOf(lhs))
		default:
			return false
		}
	}
	return true
}

// callsFunction reports whether e contains a call (which could have an
// effect whose order matters).
func callsFunction(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if _, ok := n.(*ast.CallExpr); ok {
			found = true
		}
		return !found
	})
	return found
}

func (c *checker) sortedAfter(obj types.Object, after token.Pos, body *ast.BlockStmt) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		if found {
			return false
		}
		call, ok := n.(*ast.CallExpr)
		if !ok || call.Pos() < after || len(call.Args) == 0 {
			return true
		}
		if path, name, ok := c.pkgFunc(call); !ok || !sortFuncs[path][name] {
			return true
		}
		if arg, ok := call.Args[0].(*ast.Ident); ok && c.info.ObjectOf(arg) == obj {
			found = true
		}
		return true
	})
	return found
}
