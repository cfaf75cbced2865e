package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/vigil-run/vigil/config"
	"github.com/vigil-run/vigil/plugins/budget"
)

// pricesOf returns the price table of the enabled budget entry of cfg's
// composition (the first, groups included), nil when it has none: the
// usage `sessions show` and `sessions list --json` report is priced as
// the budget plugin prices it. Only that entry is decoded for use, so
// the variables other entries name need not be set.
func pricesOf(e *env, cfg string) (map[string]budget.Price, error) {
	only := func(name string) bool { return name == budget.Name }
	path, builtin := resolveConfig(cfg)
	var f *config.File
	var err error
	if builtin {
		f, err = builtinFile(e, only)
	} else if f, err = config.LoadOnly(path, only); err != nil {
		err = &configError{err}
	}
	if err != nil {
		return nil, err
	}
	return findPrices(f.Entries), nil
}

func findPrices(entries []config.Entry) map[string]budget.Price {
	c, _ := config.Find(entries, budget.Name)
	return budget.PricesOf(c)
}

// describeSpent renders usage and cost: "tokens in 6, out 10; $0.000012".
func describeSpent(s budget.Spent) string {
	out := fmt.Sprintf("tokens in %d, out %d", s.Input, s.Output)
	switch {
	case s.Cost != nil:
		out += "; $" + strconv.FormatFloat(*s.Cost, 'f', -1, 64)
	case len(s.Unpriced) > 0:
		names := make([]string, len(s.Unpriced))
		for i, m := range s.Unpriced {
			names[i] = m
			if m == "" {
				names[i] = "the provider's default model"
			}
		}
		out += "; no price for " + strings.Join(names, ", ")
	}
	return out
}
