package main

import (
	"bufio"
	"go/build"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestArchitectureImports keeps ARCHITECTURE.md's package map honest: each
// row that names one package lists exactly the packages of this module its
// non-test files import, and every package of the module has a row.
func TestArchitectureImports(t *testing.T) {
	const module = "github.com/driftwatch/driftwatch"
	f, err := os.Open("ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	documented := make(map[string]bool)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) < 5 {
			continue
		}
		names := backticked(cells[1])
		for _, n := range names {
			documented[n] = true
		}
		if len(names) != 1 || strings.Contains(cells[3], "(see") {
			continue // a row of several packages documents no imports
		}
		want := backticked(cells[3])
		dir := names[0]
		if dir == "main" {
			dir = "."
		}
		got := ownImports(t, module, dir)
		if !slices.Equal(got, want) {
			t.Errorf("ARCHITECTURE.md: %s imports %v, the code imports %v", names[0], want, got)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if strings.HasPrefix(d.Name(), ".") && path != "." || d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != "." {
			return filepath.SkipDir // another module (internal/third_party): not this module's packages
		}
		p, err := build.ImportDir(path, 0)
		if err != nil || len(p.GoFiles) == 0 {
			return nil // no Go package here
		}
		name := filepath.ToSlash(path)
		if name == "." {
			name = "main"
		}
		if !documented[name] {
			t.Errorf("ARCHITECTURE.md has no row for package %s", name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// backticked returns the `quoted` words of a table cell that name packages
// (not files).
func backticked(cell string) []string {
	var out []string
	parts := strings.Split(cell, "`")
	for i := 1; i < len(parts); i += 2 {
		if !strings.Contains(parts[i], ".go") {
			out = append(out, parts[i])
		}
	}
	return out
}

// ownImports returns, sorted, the packages of the module that the non-test
// files of the package in dir import, relative to the module ("main" for
// the root).
func ownImports(t *testing.T, module, dir string) []string {
	t.Helper()
	p, err := build.ImportDir(dir, 0)
	if err != nil {
		t.Fatalf("package %s: %v", dir, err)
	}
	out := []string{}
	for _, imp := range p.Imports {
		if rel, ok := strings.CutPrefix(imp, module+"/"); ok {
			out = append(out, rel)
		}
	}
	slices.Sort(out)
	return out
}
