package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/plugins/external/sdk"
)

func TestConvert(t *testing.T) {
	cases := []struct {
		in   args
		want string
		code string
	}{
		{args{10, "km", "mi"}, "6.21371 mi", ""},
		{args{100, "C", "F"}, "212 F", ""},
		{args{-40, "F", "C"}, "-40 C", ""},
		{args{0, "C", "K"}, "273.15 K", ""},
		{args{1, "lb", "g"}, "453.592 g", ""},
		{args{2, "h", "min"}, "120 min", ""},
		{args{1, "km", "kg"}, "", CodeUnit},
		{args{1, "parsec", "km"}, "", CodeUnit},
	}
	c := &converter{precision: 6}
	for _, tc := range cases {
		got, err := c.convert(tc.in)
		if tc.code != "" {
			var te *sdk.ToolError
			require.ErrorAs(t, err, &te, "%+v", tc.in)
			assert.Equal(t, tc.code, te.Code)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "%+v", tc.in)
	}
}

func TestConfigurePrecision(t *testing.T) {
	c := &converter{precision: 6}
	require.NoError(t, c.configure(Config{Precision: 3}))
	got, err := c.convert(args{10, "km", "mi"})
	require.NoError(t, err)
	assert.Equal(t, "6.21 mi", got)
	require.Error(t, c.configure(Config{Precision: 40}))
}
