package config

import (
	"encoding"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v4"
)

// decoder decodes YAML nodes into Go values strictly, reporting every
// problem at the position of the node that caused it.
type decoder struct {
	file   string
	lookup func(string) (string, bool)
	// only, when set, selects the entries applied (see LoadOnly).
	only func(name string) bool
	// dir is the absolute directory of the file, against which relative
	// values of path fields resolve; "" keeps them as written (Parse).
	dir string
	// path is set while a field tagged `vigil:"path"` is decoded.
	path bool

	// aliasDepth is how many aliases the walk is inside; expanded counts
	// the nodes aliases added to the walk so far (see alias).
	aliasDepth int
	expanded   int
	sizes      map[*yaml.Node]int

	// problems are the file's errors found so far: the walk goes on past
	// a mistake, so one run reports them all (see keep).
	problems []*Error
}

// result is the error of a walk that returned err: err itself when it
// stopped the walk, else every problem kept on the way (nil for none).
func (d *decoder) result(err error) error {
	if err != nil {
		return err
	}
	return problems(d.problems)
}

// keep records err, a problem at a position, and returns nil so that the
// walk goes on to the next value; any other error (and an input too
// large to walk further) is returned to stop it.
func (d *decoder) keep(err error) error {
	var ce *Error
	if err == nil || !errors.As(err, &ce) || errors.Is(err, ErrTooLarge) {
		return err
	}
	d.problems = append(d.problems, ce)
	return nil
}

func (d *decoder) errAt(n *yaml.Node, sentinel error, format string, args ...any) error {
	return &Error{File: d.file, Line: n.Line, Col: n.Column, Msg: fmt.Sprintf(format, args...), Err: sentinel}
}

// sizeInProgress marks a node whose size is being computed: meeting it
// again means an alias inside its own anchor's value.
const sizeInProgress = -1

// alias accounts for walking the value of alias n. yaml.v3 leaves aliases
// unexpanded in a yaml.Node tree, so its own limit on alias expansion does
// not apply to the decoder's walk: a few lines of nested aliases (a
// billion laughs) would expand to gigabytes. The nodes each outermost
// alias expands to, nested aliases expanded, are counted against
// MaxAliasNodes for the whole file before the walk goes in, and an alias
// inside its own anchor's value (which the walk would follow forever) is
// refused. The caller calls d.aliasDepth-- when done with the value.
func (d *decoder) alias(n *yaml.Node) error {
	if d.aliasDepth > 0 {
		d.aliasDepth++ // already counted with the outermost alias
		return nil
	}
	if d.sizes == nil {
		d.sizes = map[*yaml.Node]int{}
	}
	size, ok := d.size(n.Alias)
	if !ok {
		return d.errAt(n, ErrTooLarge, "alias *%s refers to a value that contains it", n.Value)
	}
	d.expanded += size
	if d.expanded > MaxAliasNodes {
		return d.errAt(n, ErrTooLarge, "aliases expand to more than %d YAML nodes (an alias bomb?)", MaxAliasNodes)
	}
	d.aliasDepth++
	return nil
}

// size returns the number of nodes n expands to, aliases expanded,
// saturating just above MaxAliasNodes; false for a cycle. Sizes are
// memoized, so nested aliases cost one visit each.
func (d *decoder) size(n *yaml.Node) (int, bool) {
	if n == nil {
		return 0, true
	}
	if s, ok := d.sizes[n]; ok {
		return s, s != sizeInProgress
	}
	d.sizes[n] = sizeInProgress
	if n.Kind == yaml.AliasNode {
		s, ok := d.size(n.Alias)
		if ok {
			d.sizes[n] = s
		}
		return s, ok
	}
	total := 1
	for _, c := range n.Content {
		s, ok := d.size(c)
		if !ok {
			return 0, false
		}
		total = min(total+s, MaxAliasNodes+1)
	}
	d.sizes[n] = total
	return total, true
}

// expand replaces ${VAR} in a scalar with the variable's value; $${ is a
// literal ${. An unset variable, a ${ without its } and a ${...} that is
// not a variable name are errors: taken literally, they would reach a
// plugin as a value nobody meant.
func (d *decoder) expand(n *yaml.Node) (string, error) {
	s := n.Value
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		if i > 0 && s[i-1] == '$' {
			b.WriteString(s[:i-1])
			b.WriteString("${")
			s = s[i+2:]
			continue
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i+2:], '}')
		if end < 0 {
			return "", d.errAt(n, ErrBadVariable, "unterminated %q: a variable is written ${NAME} (write $${ for a literal ${)", short(s[i:]))
		}
		name := s[i+2 : i+2+end]
		if !varName.MatchString(name) {
			return "", d.errAt(n, ErrBadVariable, "%q is not a variable name: a variable is written ${NAME} with letters, digits and _ (write $${ for a literal ${)", name)
		}
		v, ok := d.lookup(name)
		if !ok {
			return "", d.errAt(n, ErrUnsetVariable, "environment variable %s is not set", name)
		}
		b.WriteString(v)
		s = s[i+2+end+1:]
	}
}

var varName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// short cuts s for an error message.
func short(s string) string {
	if r := []rune(s); len(r) > 20 {
		return string(r[:20]) + "…"
	}
	return s
}

var (
	durationType        = reflect.TypeFor[time.Duration]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	positionerType      = reflect.TypeFor[positioner]()
)

// positioner is a value that records the position of the node it was
// decoded from.
type positioner interface{ SetPosition(line, col int) }

// decode stores node into v (addressable).
func (d *decoder) decode(n *yaml.Node, v reflect.Value) error {
	switch {
	case n.Kind == yaml.DocumentNode && len(n.Content) == 1:
		return d.decode(n.Content[0], v)
	case n.Kind == yaml.AliasNode:
		if err := d.alias(n); err != nil {
			return err
		}
		defer func() { d.aliasDepth-- }()
		return d.decode(n.Alias, v)
	case n.Kind == yaml.ScalarNode && n.Tag == "!!null":
		v.Set(reflect.Zero(v.Type()))
		return nil
	case v.Kind() == reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		return d.decode(n, v.Elem())
	}
	if v.CanAddr() && v.Addr().Type().Implements(positionerType) {
		// A value that remembers where it was written (a name a check of
		// the whole file may point at) learns it once decoded.
		defer v.Addr().Interface().(positioner).SetPosition(n.Line, n.Column)
	}
	return d.decodeValue(n, v)
}

// decodeValue stores node n, neither a document, an alias nor a null,
// into v, not a pointer: by the type's own text decoding, as a duration,
// or by its kind.
func (d *decoder) decodeValue(n *yaml.Node, v reflect.Value) error {
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
		return d.decodeSlice(n, v)
	case reflect.Map:
		return d.decodeMap(n, v)
	case reflect.Interface:
		return d.decodeInterface(n, v)
	}
	return d.decodeScalar(n, v)
}

func (d *decoder) decodeSlice(n *yaml.Node, v reflect.Value) error {
	if n.Kind != yaml.SequenceNode {
		return d.errAt(n, ErrType, "expected a list, got %s", describe(n))
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, c := range n.Content {
		if err := d.keep(d.decode(c, s.Index(i))); err != nil {
			return err
		}
	}
	v.Set(s)
	return nil
}

func (d *decoder) decodeMap(n *yaml.Node, v reflect.Value) error {
	if n.Kind != yaml.MappingNode {
		return d.errAt(n, ErrType, "expected a mapping, got %s", describe(n))
	}
	m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := reflect.New(v.Type().Key()).Elem()
		e := reflect.New(v.Type().Elem()).Elem()
		kerr := d.keep(d.decode(n.Content[i], k))
		if kerr == nil {
			kerr = d.keep(d.decode(n.Content[i+1], e))
		}
		if kerr != nil {
			return kerr
		}
		m.SetMapIndex(k, e)
	}
	v.Set(m)
	return nil
}

// decodeInterface stores n's plain Go value (see generic) into v.
func (d *decoder) decodeInterface(n *yaml.Node, v reflect.Value) error {
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
}

// decodeScalar stores scalar n into v, a string, a boolean or a number.
func (d *decoder) decodeScalar(n *yaml.Node, v reflect.Value) error {
	switch v.Kind() {
	case reflect.String:
		s, err := d.scalar(n, "a string")
		if err != nil {
			return err
		}
		if d.path {
			if s, err = d.resolve(n, s); err != nil {
				return err
			}
		}
		v.SetString(s)
		return nil
	case reflect.Bool:
		return d.parsed(n, "a boolean", func(s string) error {
			b, err := strconv.ParseBool(s)
			if err == nil {
				v.SetBool(b)
			}
			return err
		})
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return d.parsed(n, "an integer", func(s string) error {
			i, err := strconv.ParseInt(s, 0, v.Type().Bits())
			if err == nil {
				v.SetInt(i)
			}
			return err
		})
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return d.parsed(n, "a non-negative integer", func(s string) error {
			i, err := strconv.ParseUint(s, 0, v.Type().Bits())
			if err == nil {
				v.SetUint(i)
			}
			return err
		})
	case reflect.Float32, reflect.Float64:
		return d.parsed(n, "a number", func(s string) error {
			f, err := strconv.ParseFloat(s, v.Type().Bits())
			if err == nil {
				v.SetFloat(f)
			}
			return err
		})
	}
	return d.errAt(n, ErrType, "cannot decode into %s", v.Type())
}

// parsed hands scalar n, variables expanded, to parse, which stores it;
// a value parse refuses is an error at n saying it is not want.
func (d *decoder) parsed(n *yaml.Node, want string, parse func(string) error) error {
	s, err := d.scalar(n, want)
	if err != nil {
		return err
	}
	if parse(s) != nil {
		return d.errAt(n, ErrType, "cannot use %q as %s", s, want)
	}
	return nil
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
		if err := d.alias(n); err != nil {
			return nil, err
		}
		defer func() { d.aliasDepth-- }()
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
	// path marks a file or directory name (`vigil:"path"`): a relative
	// value resolves against the file's directory (see resolve).
	path bool
	// enum is the closed set of values a string field takes
	// (`enum:"a,b"`): the decoder refuses others and the schema lists it.
	enum []string
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
		vt := f.Tag.Get("vigil")
		fi := fieldInfo{key: name, index: []int{i}, required: hasOpt(vt, "required"), path: hasOpt(vt, "path")}
		if e := f.Tag.Get("enum"); e != "" {
			fi.enum = strings.Split(e, ",")
		}
		out = append(out, fi)
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
		if err := d.keep(d.structField(n.Content[i], n.Content[i+1], v, fields, seen)); err != nil {
			return err
		}
	}
	for _, f := range fields {
		if f.required && !seen[f.key] {
			if err := d.keep(d.errAt(n, ErrMissingKey, "missing required key %q", f.key)); err != nil {
				return err
			}
		}
	}
	return nil
}

// structField decodes the value val of key k into its field of v, a
// struct with the given fields; seen holds the keys given so far.
func (d *decoder) structField(k, val *yaml.Node, v reflect.Value, fields []fieldInfo, seen map[string]bool) error {
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
		return d.errAt(k, ErrUnknownKey, "unknown key %q%s", k.Value, suggest(k.Value, keys))
	}
	if seen[fi.key] {
		return d.errAt(k, ErrType, "key %q given twice", k.Value)
	}
	seen[fi.key] = true
	fv := v.FieldByIndex(fi.index)
	if fi.path && !isStrings(fv.Type()) {
		// A plugin's mistake, not the file's: say so rather than
		// resolve inside a value that holds more than names.
		return d.errAt(k, ErrType, "key %q is marked as a path but %s holds no string", k.Value, fv.Type())
	}
	outer := d.path
	d.path = fi.path
	defer func() { d.path = outer }()
	if err := d.decode(val, fv); err != nil {
		return err
	}
	return d.checkEnum(val, fv, fi.enum)
}

// checkEnum refuses a value of v, decoded from n, outside the closed set
// enum (none: any value); v is a string, or a list of them.
func (d *decoder) checkEnum(n *yaml.Node, v reflect.Value, enum []string) error {
	if len(enum) == 0 {
		return nil
	}
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if v.Kind() == reflect.Slice {
		for i := 0; i < v.Len() && i < len(n.Content); i++ {
			if err := d.keep(d.checkEnum(n.Content[i], v.Index(i), enum)); err != nil {
				return err
			}
		}
		return nil
	}
	// "" is a field left to its default, as if not given (a ${VAR} set
	// empty): the plugin's own check decides what it means.
	if v.Kind() != reflect.String || v.String() == "" || slices.Contains(enum, v.String()) {
		return nil
	}
	return d.errAt(n, ErrType, "cannot use %q here: one of %s%s", v.String(), strings.Join(enum, ", "), suggest(v.String(), enum))
}

// isStrings reports whether t is a string, or a slice or pointer of
// them: the types a path field may have.
func isStrings(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.String:
		return true
	case reflect.Pointer, reflect.Slice:
		return isStrings(t.Elem())
	}
	return false
}

// resolve makes the value of a path field independent of the working
// directory: a relative path is joined to the file's directory; an empty
// or absolute one is kept; a leading ~ or ~/ is the user's home
// directory, as in a shell (~user is refused rather than taken as a
// folder named "~user"). Without a directory (Parse) a relative path is
// kept as written.
func (d *decoder) resolve(n *yaml.Node, p string) (string, error) {
	if p == "" {
		return p, nil
	}
	if p[0] == '~' {
		rest := p[1:]
		if rest != "" && !os.IsPathSeparator(rest[0]) {
			return "", d.errAt(n, ErrInvalid, "cannot use %q as a path: only ~ and ~/ (your home directory) are expanded, write ~user's path out", short(p))
		}
		home, err := os.UserHomeDir()
		if err != nil {
			return "", d.errAt(n, ErrInvalid, "cannot expand ~ in %q: %v", short(p), err)
		}
		return filepath.Join(home, rest), nil
	}
	if filepath.IsAbs(p) || d.dir == "" {
		return p, nil
	}
	return filepath.Join(d.dir, p), nil
}

// envLookup is the default variable lookup.
func envLookup(name string) (string, bool) { return os.LookupEnv(name) }
