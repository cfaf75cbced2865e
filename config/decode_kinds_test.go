package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v4"
)

// upper is a value decoded by its own UnmarshalText.
type upper string

func (u *upper) UnmarshalText(b []byte) error {
	if string(b) == "bad" {
		return errors.New("bad is not upper")
	}
	*u = upper(strings.ToUpper(string(b)))
	return nil
}

type kinds struct {
	S string         `yaml:"s"`
	B bool           `yaml:"b"`
	I int8           `yaml:"i"`
	U uint16         `yaml:"u"`
	F float32        `yaml:"f"`
	D time.Duration  `yaml:"d"`
	T upper          `yaml:"t"`
	P *int           `yaml:"p"`
	M map[string]int `yaml:"m"`
	L []int          `yaml:"l"`
	A any            `yaml:"a"`
	E error          `yaml:"e"`
	C complex64      `yaml:"c"`
}

// TestDecodeKinds pins what decode stores, or the error it reports, for
// each kind of value a plugin's config may hold.
func TestDecodeKinds(t *testing.T) {
	four := 4
	for _, tc := range []struct {
		name, yaml string
		want       kinds
		err        string
	}{
		{name: "every kind", yaml: "s: ${X}-s\nb: true\ni: -3\nu: 0x10\nf: 1.5\nd: 2m\nt: abc\np: 4\nm: {a: 1}\nl: [1, 2]\na: {k: [v, 1]}\n",
			want: kinds{S: "x-s", B: true, I: -3, U: 16, F: 1.5, D: 2 * time.Minute, T: "ABC", P: &four, M: map[string]int{"a": 1}, L: []int{1, 2},
				A: map[string]any{"k": []any{"v", 1}}}},
		{name: "nulls", yaml: "s: ~\np: ~\na: ~\nm: ~\nl: ~\n", want: kinds{}},
		{name: "alias", yaml: "s: &v x\nt: *v\n", want: kinds{S: "x", T: "X"}},
		{name: "string of a list", yaml: "s: [1]", err: `f.yaml:1:4: expected a string, got a list`},
		{name: "unset variable", yaml: "s: ${NOPE}", err: `f.yaml:1:4: environment variable NOPE is not set`},
		{name: "boolean", yaml: "b: maybe", err: `f.yaml:1:4: cannot use "maybe" as a boolean`},
		{name: "integer out of range", yaml: "i: 300", err: `f.yaml:1:4: cannot use "300" as an integer`},
		{name: "integer of a mapping", yaml: "i: {}", err: `f.yaml:1:4: expected an integer, got a mapping`},
		{name: "negative unsigned", yaml: "u: -1", err: `f.yaml:1:4: cannot use "-1" as a non-negative integer`},
		{name: "number", yaml: "f: x", err: `f.yaml:1:4: cannot use "x" as a number`},
		{name: "duration", yaml: "d: 5", err: `f.yaml:1:4: cannot use "5" as a duration (like 30s or 2m)`},
		{name: "duration of a list", yaml: "d: []", err: `f.yaml:1:4: expected a duration, got a list`},
		{name: "text refused", yaml: "t: bad", err: `f.yaml:1:4: bad is not upper`},
		{name: "pointer refused", yaml: "p: x", err: `f.yaml:1:4: cannot use "x" as an integer`},
		{name: "map of a list", yaml: "m: [1]", err: `f.yaml:1:4: expected a mapping, got a list`},
		{name: "map key", yaml: "m: {[1]: 2}", err: `f.yaml:1:5: expected a string, got a list`},
		{name: "map value", yaml: "m: {a: b}", err: `f.yaml:1:8: cannot use "b" as an integer`},
		{name: "list of a scalar", yaml: "l: x", err: `f.yaml:1:4: expected a list, got "x"`},
		{name: "list item", yaml: "l: [1, x]", err: `f.yaml:1:8: cannot use "x" as an integer`},
		{name: "interface not assignable", yaml: "e: {k: v}", err: `f.yaml:1:4: cannot use a mapping here`},
		{name: "unsupported kind", yaml: "c: 1", err: `f.yaml:1:4: cannot decode into complex64`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var doc yaml.Node
			require.NoError(t, yaml.Unmarshal([]byte(tc.yaml), &doc))
			d := &decoder{file: "f.yaml", lookup: func(name string) (string, bool) { return "x", name == "X" }}
			var got kinds
			err := d.result(d.decode(&doc, reflect.ValueOf(&got).Elem()))
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}
