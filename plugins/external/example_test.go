//go:build unix

package external_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/plugins/external"
)

// Loading an out-of-process plugin by hand (plugins.yaml does the same
// with `name: external`) and calling its tool as the loop would. The
// plugin is examples/plugins/units, which TestMain builds into bins.
func ExampleNew() {
	root := bus.New()
	defer root.Dispose()
	c := root.Context()
	_, err := c.Plugin(external.New(), &external.Config{
		Path:    bins["units"], // ./bin/units after `go build -o bin/units ./examples/plugins/units`
		Timeout: 5 * time.Second,
		Config:  map[string]any{"precision": 4},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	convert, err := agentloop.ToolServices.Key("convert").Get(c)
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := convert.Execute(context.Background(), json.RawMessage(`{"value":26.2,"from":"mi","to":"km"}`))
	fmt.Println(out, err)
	// Output: 42.16 km <nil>
}
