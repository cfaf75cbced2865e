package main

// The built-in plugins register themselves by name when imported.
import (
	_ "github.com/vigil-run/vigil/invariants"
	_ "github.com/vigil-run/vigil/plugins"
)
