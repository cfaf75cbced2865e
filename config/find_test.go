package config_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vigil-run/vigil/config"
)

func TestFindTakesTheFirstEnabledEntryGroupsIncluded(t *testing.T) {
	entries := []config.Entry{
		{Name: "budget", Disabled: true, Config: "off"},
		{Name: "group", Config: []config.Entry{
			{Name: "other", Config: "x"},
			{Name: "budget", Config: "nested"},
		}},
		{Name: "budget", Config: "top"},
	}
	c, ok := config.Find(entries, "budget")
	assert.True(t, ok)
	assert.Equal(t, "nested", c)
	_, ok = config.Find(entries, "missing")
	assert.False(t, ok)
	_, ok = config.Find(nil, "budget")
	assert.False(t, ok)
}
