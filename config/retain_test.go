package config

import (
	"reflect"
	"testing"
	"unsafe"
)

// TestLoadedValuesOwnTheirStrings: the values a loaded config keeps, and the
// NodeSpecs it compiles to, hold strings of their own, not substrings of the
// file's text (which would keep the whole text alive for the hub's life),
// and the config the app keeps without its desired state drops the text
// when no Git source needs it again.
func TestLoadedValuesOwnTheirStrings(t *testing.T) {
	cfg, err := Load(examplePath, LoadOptions{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	text := cfg.text
	if text == "" {
		t.Fatal("the loaded config has no text")
	}
	lo := uintptr(unsafe.Pointer(unsafe.StringData(text)))
	hi := lo + uintptr(len(text))
	inText := func(what string, v reflect.Value) {
		t.Helper()
		var n int
		walkStrings(v, map[uintptr]bool{}, func(path, s string) {
			n++
			if p := uintptr(unsafe.Pointer(unsafe.StringData(s))); p >= lo && p < hi {
				t.Errorf("%s%s = %q is a substring of the file's text", what, path, s)
			}
		})
		if n == 0 {
			t.Fatalf("%s: no strings found: the walk is broken", what)
		}
	}
	specs := Compile(cfg)
	if len(specs) == 0 {
		t.Fatal("no specs")
	}
	inText("specs", reflect.ValueOf(specs))
	kept := cfg.WithoutDesired()
	if kept.text != "" {
		t.Error("WithoutDesired kept the text of a config without Git sources")
	}
	kept.ClusterAPI = append(kept.ClusterAPI[:0:0], kept.ClusterAPI...)
	inText("WithoutDesired", reflect.ValueOf(kept).Elem())
	// The applications themselves (kept whole while Cluster API discovery
	// may compile them).
	inText("applications", reflect.ValueOf(cfg.Applications))
}

// walkStrings calls f with every string reachable from v (unexported
// fields included), with its path.
func walkStrings(v reflect.Value, seen map[uintptr]bool, f func(path, s string)) {
	var walk func(path string, v reflect.Value)
	walk = func(path string, v reflect.Value) {
		switch v.Kind() {
		case reflect.String:
			if s := v.String(); s != "" {
				f(path, s)
			}
		case reflect.Pointer:
			if v.IsNil() || seen[v.Pointer()] {
				return
			}
			seen[v.Pointer()] = true
			walk(path, v.Elem())
		case reflect.Interface:
			if !v.IsNil() {
				walk(path, v.Elem())
			}
		case reflect.Struct:
			for i := range v.NumField() {
				walk(path+"."+v.Type().Field(i).Name, v.Field(i))
			}
		case reflect.Slice, reflect.Array:
			if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
				return // bytes are the object bodies, not text values
			}
			for i := range v.Len() {
				walk(path+"[]", v.Index(i))
			}
		case reflect.Map:
			it := v.MapRange()
			for it.Next() {
				walk(path+"{key}", it.Key())
				walk(path+"{}", it.Value())
			}
		}
	}
	walk("", v)
}
