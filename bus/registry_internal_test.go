package bus

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFuncPackageIsTheImportPathOfAFunctionName(t *testing.T) {
	for name, want := range map[string]string{
		"github.com/vigil-run/vigil/plugins/store/memory.init.0": "github.com/vigil-run/vigil/plugins/store/memory",
		"github.com/vigil-run/vigil/bus.Register":                "github.com/vigil-run/vigil/bus",
		"example.com/a.(*T).M":                                   "example.com/a",
		"example.com/a.RegisterFunc[...]":                        "example.com/a",
		// The linker escapes the dots of the last path element.
		"example.com/fn/x%2ey.F": "example.com/fn/x.y",
		"main.init.0":            "main",
		"":                       "",
	} {
		assert.Equal(t, want, funcPackage(name), name)
	}
}
