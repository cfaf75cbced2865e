// Command units is an example out-of-process Vigil plugin: one tool,
// convert, that converts a value between units of length, mass, time and
// temperature.
//
// Build it and load it from plugins.yaml:
//
//	go build -o bin/units ./examples/plugins/units
//
//	plugins:
//	  - id: units
//	    name: external
//	    config: { path: ./bin/units, config: { precision: 4 } }
package main

import (
	"context"

	"github.com/vigil-run/vigil/plugins/external/sdk"
)

// Config is the plugin's config (the config key of its plugins.yaml entry).
type Config struct {
	// Precision is the number of significant digits of results (default 6).
	Precision int `json:"precision"`
}

func main() {
	c := &converter{precision: 6}
	sdk.Serve(&sdk.Plugin[Config]{
		Name:    "units",
		Version: "1.0.0",
		Configure: func(_ context.Context, _ *sdk.Host, cfg Config) error {
			return c.configure(cfg)
		},
		Tools: []sdk.Tool{c.tool()},
	})
}
