//go:build unix

package external_test

import (
	"fmt"
	"time"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/plugins/external"
)

// Loading an out-of-process plugin by hand; plugins.yaml does the same
// with `name: external`.
func ExampleNew() {
	root := bus.New()
	defer root.Dispose()
	_, err := root.Context().Plugin(external.New(), &external.Config{
		Path:    "./bin/units",
		Timeout: 5 * time.Second,
		Config:  map[string]any{"precision": 4},
	})
	if err != nil {
		fmt.Println(err)
	}
}
