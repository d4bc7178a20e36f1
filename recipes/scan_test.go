package recipes_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// forbiddenCalls are the package-level calls recipe code must not make:
// clocks and timers that the simulator cannot schedule, and wall-clock
// deadlines. Conn has Now, Sleep, WithTimeout and Wait instead.
var forbiddenCalls = map[string][]string{
	"time":    {"Sleep", "After", "AfterFunc", "Now", "Since", "Until", "NewTimer", "NewTicker", "Tick"},
	"context": {"WithTimeout", "WithDeadline", "WithTimeoutCause", "WithDeadlineCause", "AfterFunc"},
}

// forbidden lists the go statements, select statements, channel receives
// and forbidden calls of a parsed file.
func forbidden(fset *token.FileSet, f *ast.File) []string {
	imports := map[string]string{} // local name -> import path
	for _, imp := range f.Imports {
		p := strings.Trim(imp.Path.Value, `"`)
		local := filepath.Base(p)
		if imp.Name != nil {
			local = imp.Name.Name
		}
		imports[local] = p
	}
	var found []string
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			found = append(found, fset.Position(n.Pos()).String()+": go statement")
		case *ast.SelectStmt:
			found = append(found, fset.Position(n.Pos()).String()+": select statement")
		case *ast.UnaryExpr:
			if n.Op == token.ARROW {
				found = append(found, fset.Position(n.Pos()).String()+": channel receive")
			}
		case *ast.SelectorExpr:
			x, ok := n.X.(*ast.Ident)
			if !ok {
				return true
			}
			for _, banned := range forbiddenCalls[imports[x.Name]] {
				if n.Sel.Name == banned {
					found = append(found, fset.Position(n.Pos()).String()+": "+imports[x.Name]+"."+banned)
				}
			}
		}
		return true
	})
	return found
}

// TestNoConcurrencyPrimitives scans the recipes (recipes/*.go, not tests)
// and fails on go statements, select statements, channel receives, and
// the forbidden calls: recipe code blocks, waits and sleeps only through
// Conn.
func TestNoConcurrencyPrimitives(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	scanned := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		scanned++
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range forbidden(fset, f) {
			t.Error(bad)
		}
	}
	if scanned < 8 {
		t.Fatalf("scanned only %d recipe files", scanned)
	}
}

// TestScanCatches checks that the scan sees what it must refuse.
func TestScanCatches(t *testing.T) {
	src := `package x
import ("time"; ctxpkg "context")
func f(ch chan int) {
	go f(ch)
	select {}
	<-ch
	x := <-ch
	time.Sleep(1)
	_ = time.Now()
	ctxpkg.WithTimeout(nil, 0)
	var d time.Duration
}`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := forbidden(fset, f); len(got) != 7 {
		t.Fatalf("found %d of 7 forbidden constructs: %q", len(got), got)
	}
}
