package config

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"

	"github.com/driftwatch/driftwatch/hub"
)

// The config file's schema is the public types themselves: every exported
// field of Config, Hub, Cluster, ClusterAPISource, Application, Service and
// Resources carries a `yaml` tag naming its key, and the fields' order is
// the schema order (a public type without tags, clientcmdapi.AllowlistEntry,
// has an unexported document type instead: execAllowlistEntry). The
// decoder derives from the tags the known fields of
// each mapping (unknown keys are reported with a did-you-mean hint among
// them), which fields are required, and how plain fields are read. Adding a
// simple field to the file is therefore one edit: the field, with its tag
// and doc comment, plus its validation if it has any (a hook, see on).
//
// The tag is `yaml:"name[,option]..."` with the options
//
//	required   the key must be present and not null
//	min=N      an integer field's smallest value (default 0)
//	max=N      an integer field's largest value (default math.MaxInt32)
//
// `yaml:"-"` marks a field that is not in the file (Config.Path).

// schemaField is one key of a mapping, read from a struct field's tag.
type schemaField struct {
	name     string // the YAML key
	index    int    // the struct field's index
	offset   uintptr
	typ      reflect.Type
	required bool
	min, max int64 // an integer field's range
}

// schema is the keys of a mapping, in schema order.
type schema struct {
	fields []schemaField
	names  []string // the keys alone: the known fields for did-you-mean
}

// keyPattern is what a YAML key of the schema looks like: lowerCamelCase.
var keyPattern = regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)

// schemaOf returns the schema of struct type t, built once per walker. A
// malformed tag, or an exported field without one, is a programming error:
// it panics (and TestSchemaTags says which field is wrong).
func (w *walker) schemaOf(t reflect.Type) *schema {
	if s, ok := w.schemas[t]; ok {
		return s
	}
	s, err := buildSchema(t)
	if err != nil {
		panic(err)
	}
	if w.schemas == nil {
		w.schemas = make(map[reflect.Type]*schema)
	}
	w.schemas[t] = s
	return s
}

// buildSchema reads the tags of struct type t.
func buildSchema(t reflect.Type) (*schema, error) {
	s := &schema{}
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		tag, ok := sf.Tag.Lookup("yaml")
		if !ok {
			return nil, fmt.Errorf("config: %s.%s has no yaml tag (give it the key it has in the file, or `yaml:\"-\"`)", t, sf.Name)
		}
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if !keyPattern.MatchString(name) {
			return nil, fmt.Errorf("config: %s.%s: yaml key %q is not lowerCamelCase", t, sf.Name, name)
		}
		for _, f := range s.fields {
			if f.name == name {
				return nil, fmt.Errorf("config: %s.%s: yaml key %q is also %s.%s's", t, sf.Name, name, t, t.Field(f.index).Name)
			}
		}
		f := schemaField{name: name, index: i, offset: sf.Offset, typ: sf.Type, max: math.MaxInt32}
		for opt := range strings.SplitSeq(opts, ",") {
			key, val, _ := strings.Cut(opt, "=")
			var err error
			switch key {
			case "":
			case "required":
				f.required = true
			case "min":
				f.min, err = strconv.ParseInt(val, 10, 64)
			case "max":
				f.max, err = strconv.ParseInt(val, 10, 64)
			default:
				err = fmt.Errorf("unknown option %q", opt)
			}
			if err != nil {
				return nil, fmt.Errorf("config: %s.%s: yaml tag %q: %v", t, sf.Name, tag, err)
			}
		}
		s.fields = append(s.fields, f)
		s.names = append(s.names, name)
	}
	return s, nil
}

// A hook reads one field by hand, for a field whose value needs more than
// its type says: validation, or defaults that depend on other fields. Made
// by on.
type hook struct {
	field reflect.Value // a pointer to the struct field
	read  func(c child)
}

// on returns a hook that reads the struct field *field with read. read is
// called in schema order, also when the key is absent (c.node is nil and
// c.set false), but not when a required field is missing (that is
// reported). It stores the value itself; earlier fields are already read,
// later ones not yet.
func on[T any](field *T, read func(c child)) hook {
	return hook{field: reflect.ValueOf(field), read: read}
}

// Types that read would treat specially.
var (
	durationType = reflect.TypeFor[time.Duration]()
	policyType   = reflect.TypeFor[hub.Policy]()
)

// fields reads the mapping n (at field and p) into the struct *v. Every key
// must be one of the struct's (unknown keys are reported with a hint), a
// required field must be present and not null, and the fields are read in
// schema order: with their hook when they have one, else by their type
// (see read). It returns the object read, or nil when n is not a mapping
// (reported); a null n reads as an empty mapping.
func (d *decoder) fields(n *yaml.Node, field string, p pos, v any, hooks ...hook) *object {
	rv := reflect.ValueOf(v).Elem()
	s := d.schemaOf(rv.Type())
	readers := make([]func(child), len(s.fields))
	for _, h := range hooks {
		i := fieldAt(rv, s, h.field)
		if i < 0 {
			panic(fmt.Sprintf("config: hook for a %s that is not a field of %s", h.field.Type().Elem(), rv.Type()))
		}
		readers[i] = h.read
	}
	for i, f := range s.fields {
		if readers[i] == nil && !readable(f.typ) {
			panic(fmt.Sprintf("config: %s.%s (%s) needs a hook: its type is not read by type", rv.Type(), rv.Type().Field(f.index).Name, f.name))
		}
	}

	o := d.object(n, field, p, s.names...)
	if o == nil {
		return nil
	}
	for i, f := range s.fields {
		c := o.get(f.name)
		if f.required && !o.required(c) {
			continue
		}
		if readers[i] != nil {
			readers[i](c)
			continue
		}
		if c.node != nil {
			d.read(rv.Field(f.index), c, f)
		}
	}
	return o
}

// fieldAt returns the schema index of the field of struct rv that ptr
// points to, or -1.
func fieldAt(rv reflect.Value, s *schema, ptr reflect.Value) int {
	off, t := ptr.Pointer()-rv.Addr().Pointer(), ptr.Type().Elem()
	for i, f := range s.fields {
		if f.offset == off && f.typ == t {
			return i
		}
	}
	return -1
}

// readable reports whether read can read a field of type t without a hook.
func readable(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int32, reflect.Int64, reflect.Float32, reflect.Float64:
		return true
	case reflect.Slice:
		return t.Elem().Kind() == reflect.String
	case reflect.Map:
		return t.Key().Kind() == reflect.String && t.Elem().Kind() == reflect.String
	}
	return false
}

// read reads a plain field by its type, and stores the value only when it
// is valid (an invalid value is reported and the field keeps its default):
//
//	hub.Policy       a drift policy, repair or warn
//	time.Duration    a Go duration such as 90s or 5m, more than zero
//	string           any scalar, as written (numbers and booleans too)
//	bool             true or false
//	integers         an integer between the tag's min and max
//	float32, float64 a number more than zero
//	[]string         a list of scalars, none null
//	map[..]string    a mapping of scalars (null reads as "")
func (d *decoder) read(fv reflect.Value, c child, f schemaField) {
	switch t := fv.Type(); {
	case t == policyType:
		if p, ok := d.policy(c); ok {
			fv.SetString(string(p))
		}
	case t == durationType:
		if v, ok := d.duration(c); ok {
			fv.SetInt(int64(v))
		}
	case t.Kind() == reflect.String:
		if v, ok := d.str(c); ok {
			fv.SetString(v)
		}
	case t.Kind() == reflect.Bool:
		if v, ok := d.boolean(c); ok {
			fv.SetBool(v)
		}
	case fv.CanInt():
		if v, ok := d.int(c, f.min, f.max); ok {
			fv.SetInt(v)
		}
	case fv.CanFloat():
		if v, ok := d.positive(c); ok {
			fv.SetFloat(v)
		}
	case t.Kind() == reflect.Slice:
		if vals, _, ok := d.strList(c); ok {
			l := reflect.MakeSlice(t, len(vals), len(vals))
			for i, v := range vals {
				l.Index(i).SetString(v)
			}
			fv.Set(l)
		}
	case t.Kind() == reflect.Map:
		if kvs, ok := d.strMap(c); ok {
			m := reflect.MakeMapWithSize(t, len(kvs))
			for _, e := range kvs {
				m.SetMapIndex(reflect.ValueOf(e.key).Convert(t.Key()), reflect.ValueOf(e.value).Convert(t.Elem()))
			}
			fv.Set(m)
		}
	}
}
