package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/config"
)

func newPluginsCmd(e *env) *cobra.Command {
	var schema, asJSON bool
	cmd := &cobra.Command{
		Use:   "plugins",
		Short: "List the registered plugins",
		Long: `List every plugin this binary can load by name in plugins.yaml: its name, Go
package and description. --json prints an array of {name, package,
description}; --schema prints a JSON Schema of plugins.yaml for editors.`,
		Example: `  vigil plugins
  vigil plugins --schema > plugins.schema.json`,
		Args: noArgs,
		RunE: action(func(*cobra.Command, []string) error {
			return cmdPlugins(e, schema, asJSON)
		}),
	}
	cmd.Flags().BoolVar(&schema, "schema", false, "print a JSON Schema of plugins.yaml")
	jsonFlag(cmd, &asJSON, "the list")
	return cmd
}

func cmdPlugins(e *env, schema, asJSON bool) error {
	if schema {
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
	rows := []row{}
	for _, m := range bus.Modules() {
		rows = append(rows, row{m.Name, m.Package, m.Description})
	}
	if asJSON {
		return printJSON(e.stdout, rows)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Name, r.Package, r.Description)
	}
	return tw.Flush()
}
