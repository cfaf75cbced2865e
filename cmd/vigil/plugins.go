package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"text/tabwriter"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/config"
)

func cmdPlugins(_ context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("plugins", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	schema := fs.Bool("schema", false, "print a JSON Schema of plugins.yaml")
	asJSON := fs.Bool("json", false, "print the list as JSON")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if *schema {
		s, err := config.Schema()
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(e.stdout, "%s\n", s)
		return err
	}
	type row struct {
		Name        string `json:"name"`
		Package     string `json:"package"`
		Description string `json:"description"`
	}
	var rows []row
	for _, m := range bus.Modules() {
		rows = append(rows, row{m.Name, m.Package, m.Description})
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Name, r.Package, r.Description)
	}
	return tw.Flush()
}
