package config

import (
	"encoding"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// decoder decodes YAML nodes into Go values strictly, reporting every
// problem at the position of the node that caused it.
type decoder struct {
	file   string
	lookup func(string) (string, bool)
}

func (d *decoder) errAt(n *yaml.Node, sentinel error, format string, args ...any) error {
	return &Error{File: d.file, Line: n.Line, Col: n.Column, Msg: fmt.Sprintf(format, args...), Err: sentinel}
}

var varPattern = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// expand replaces ${VAR} in a scalar with the variable's value; an unset
// variable is an error naming it.
func (d *decoder) expand(n *yaml.Node) (string, error) {
	var missing string
	out := varPattern.ReplaceAllStringFunc(n.Value, func(m string) string {
		name := m[2 : len(m)-1]
		v, ok := d.lookup(name)
		if !ok && missing == "" {
			missing = name
		}
		return v
	})
	if missing != "" {
		return "", d.errAt(n, ErrUnsetVariable, "environment variable %s is not set", missing)
	}
	return out, nil
}

var (
	durationType        = reflect.TypeFor[time.Duration]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// decode stores node into v (addressable).
func (d *decoder) decode(n *yaml.Node, v reflect.Value) error {
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		return d.decode(n.Content[0], v)
	}
	if n.Kind == yaml.AliasNode {
		return d.decode(n.Alias, v)
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		v.Set(reflect.Zero(v.Type()))
		return nil
	}
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		return d.decode(n, v.Elem())
	}
	if v.CanAddr() && v.Addr().Type().Implements(textUnmarshalerType) && n.Kind == yaml.ScalarNode {
		s, err := d.expand(n)
		if err != nil {
			return err
		}
		if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
			return d.errAt(n, ErrType, "%v", err)
		}
		return nil
	}
	if v.Type() == durationType {
		s, err := d.scalar(n, "a duration")
		if err != nil {
			return err
		}
		dur, err := time.ParseDuration(s)
		if err != nil {
			return d.errAt(n, ErrType, "cannot use %q as a duration (like 30s or 2m)", s)
		}
		v.SetInt(int64(dur))
		return nil
	}
	switch v.Kind() {
	case reflect.Struct:
		return d.decodeStruct(n, v)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return d.errAt(n, ErrType, "expected a list, got %s", describe(n))
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, c := range n.Content {
			if err := d.decode(c, s.Index(i)); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return d.errAt(n, ErrType, "expected a mapping, got %s", describe(n))
		}
		m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := reflect.New(v.Type().Key()).Elem()
			if err := d.decode(n.Content[i], k); err != nil {
				return err
			}
			e := reflect.New(v.Type().Elem()).Elem()
			if err := d.decode(n.Content[i+1], e); err != nil {
				return err
			}
			m.SetMapIndex(k, e)
		}
		v.Set(m)
		return nil
	case reflect.Interface:
		g, err := d.generic(n)
		if err != nil {
			return err
		}
		if g == nil {
			v.Set(reflect.Zero(v.Type()))
			return nil
		}
		gv := reflect.ValueOf(g)
		if !gv.Type().AssignableTo(v.Type()) {
			return d.errAt(n, ErrType, "cannot use %s here", describe(n))
		}
		v.Set(gv)
		return nil
	case reflect.String:
		s, err := d.scalar(n, "a string")
		if err != nil {
			return err
		}
		v.SetString(s)
		return nil
	case reflect.Bool:
		s, err := d.scalar(n, "a boolean")
		if err != nil {
			return err
		}
		b, err := strconv.ParseBool(s)
		if err != nil {
			return d.errAt(n, ErrType, "cannot use %q as a boolean", s)
		}
		v.SetBool(b)
		return nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		s, err := d.scalar(n, "an integer")
		if err != nil {
			return err
		}
		i, err := strconv.ParseInt(s, 0, v.Type().Bits())
		if err != nil {
			return d.errAt(n, ErrType, "cannot use %q as an integer", s)
		}
		v.SetInt(i)
		return nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		s, err := d.scalar(n, "a non-negative integer")
		if err != nil {
			return err
		}
		i, err := strconv.ParseUint(s, 0, v.Type().Bits())
		if err != nil {
			return d.errAt(n, ErrType, "cannot use %q as a non-negative integer", s)
		}
		v.SetUint(i)
		return nil
	case reflect.Float32, reflect.Float64:
		s, err := d.scalar(n, "a number")
		if err != nil {
			return err
		}
		f, err := strconv.ParseFloat(s, v.Type().Bits())
		if err != nil {
			return d.errAt(n, ErrType, "cannot use %q as a number", s)
		}
		v.SetFloat(f)
		return nil
	}
	return d.errAt(n, ErrType, "cannot decode into %s", v.Type())
}

func (d *decoder) scalar(n *yaml.Node, want string) (string, error) {
	if n.Kind != yaml.ScalarNode {
		return "", d.errAt(n, ErrType, "expected %s, got %s", want, describe(n))
	}
	return d.expand(n)
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return strconv.Quote(n.Value)
	}
	return "a YAML node"
}

// generic decodes a node into plain Go values (map[string]any, []any,
// string, int, float64, bool), expanding variables in strings.
func (d *decoder) generic(n *yaml.Node) (any, error) {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return d.generic(n.Content[0])
	case yaml.AliasNode:
		return d.generic(n.Alias)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			v, err := d.generic(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			m[n.Content[i].Value] = v
		}
		return m, nil
	case yaml.SequenceNode:
		s := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := d.generic(c)
			if err != nil {
				return nil, err
			}
			s = append(s, v)
		}
		return s, nil
	}
	switch n.Tag {
	case "!!null":
		return nil, nil
	case "!!str":
		return d.expand(n)
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, d.errAt(n, ErrType, "%v", err)
	}
	return v, nil
}

type fieldInfo struct {
	key      string
	index    []int
	required bool
}

func structFields(t reflect.Type) []fieldInfo {
	var out []fieldInfo
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") && f.Type.Kind() == reflect.Struct {
			for _, sub := range structFields(f.Type) {
				sub.index = append([]int{i}, sub.index...)
				out = append(out, sub)
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out = append(out, fieldInfo{key: name, index: []int{i}, required: hasOpt(f.Tag.Get("vigil"), "required")})
	}
	return out
}

func hasOpt(tag, opt string) bool {
	for _, o := range strings.Split(tag, ",") {
		if o == opt {
			return true
		}
	}
	return false
}

func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value) error {
	if n.Kind != yaml.MappingNode {
		return d.errAt(n, ErrType, "expected a mapping, got %s", describe(n))
	}
	fields := structFields(v.Type())
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		var fi *fieldInfo
		for j := range fields {
			if fields[j].key == k.Value {
				fi = &fields[j]
				break
			}
		}
		if fi == nil {
			keys := make([]string, len(fields))
			for j, f := range fields {
				keys[j] = f.key
			}
			msg := fmt.Sprintf("unknown key %q", k.Value)
			if s := closest(k.Value, keys); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			return d.errAt(k, ErrUnknownKey, "%s", msg)
		}
		if seen[fi.key] {
			return d.errAt(k, ErrType, "key %q given twice", k.Value)
		}
		seen[fi.key] = true
		if err := d.decode(val, v.FieldByIndex(fi.index)); err != nil {
			return err
		}
	}
	for _, f := range fields {
		if f.required && !seen[f.key] {
			return d.errAt(n, ErrMissingKey, "missing required key %q", f.key)
		}
	}
	return nil
}

// envLookup is the default variable lookup.
func envLookup(name string) (string, bool) { return os.LookupEnv(name) }
