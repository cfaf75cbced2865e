package budget_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vigil-run/vigil/plugins/budget"
)

func TestPricesOfAConfigOrAPointerToOne(t *testing.T) {
	p := map[string]budget.Price{"m": {Input: 1, Output: 2}}
	assert.Equal(t, p, budget.PricesOf(budget.Config{Prices: p}))
	assert.Equal(t, p, budget.PricesOf(&budget.Config{Prices: p}))
	assert.Nil(t, budget.PricesOf((*budget.Config)(nil)))
	assert.Nil(t, budget.PricesOf(nil))
	assert.Nil(t, budget.PricesOf("budget"))
}
