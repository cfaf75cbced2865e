package eventstream

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

func TestLooseFieldsReadAsTheSDKsReadThem(t *testing.T) {
	var v struct {
		S  []String     `json:"s"`
		I  []Int        `json:"i"`
		O  Object[Int]  `json:"o"`
		L  List[String] `json:"l"`
		L2 List[struct {
			A String `json:"a"`
		}] `json:"l2"`
	}
	require.NoError(t, json.Unmarshal([]byte(`{
		"s": ["x", 5, -1.50, 1e400, true, null, {"a": 1}, [1, 2]],
		"i": [7, "8", "9.5", "x", true, false, null, {}, 2.9, 1e400],
		"o": 3, "l": ["a"], "l2": [{"a": 1}, null]}`), &v))
	assert.Equal(t, []String{"x", "5", "-1.5", "+Inf", "true", "", `{"a": 1}`, "[1, 2]"}, v.S)
	assert.Equal(t, []Int{{7, true}, {8, true}, {9, true}, {0, false}, {1, true}, {0, true}, {}, {}, {2, true}, {1<<63 - 1, true}}, v.I)
	assert.False(t, v.O.Set, "a number is no object")
	assert.Nil(t, v.L, "an array of strings is no array of objects")
	assert.Len(t, v.L2, 2)
	assert.Equal(t, String("1"), v.L2[0].A)
}

// FuzzLooseReadsAsGJSON: whatever JSON value stands in a field, String
// and Int read it as gjson, which the SDKs read fields with, does.
func FuzzLooseReadsAsGJSON(f *testing.F) {
	for _, s := range []string{`"x"`, `5`, `-0`, `1.5e3`, `1e400`, `-12345678901234567890`, `true`, `null`, `{"a": [1]}`, `"12"`, `"1e2"`, `" 3"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		// A field of an object, as the SDKs meet it (gjson.Get).
		obj := `{"v":` + raw + `}`
		var s struct {
			V String `json:"v"`
		}
		var n struct {
			V Int `json:"v"`
		}
		if !json.Valid([]byte(obj)) || json.Unmarshal([]byte(obj), &s) != nil || json.Unmarshal([]byte(obj), &n) != nil {
			return
		}
		g := gjson.Get(obj, "v")
		assert.Equal(t, g.String(), string(s.V), "%s", raw)
		if g.Type == gjson.JSON || g.Type == gjson.Null {
			assert.False(t, n.V.Set)
			return
		}
		assert.Equal(t, g.Int(), n.V.Value, "%s", raw)
		_, err := strconv.ParseFloat(g.Str, 64)
		assert.Equal(t, g.Type != gjson.String || err == nil, n.V.Set, "%s", raw)
	})
}
