package main

// The built-in plugins register themselves by name when imported.
import (
	_ "github.com/vigil-run/vigil/agentloop"
	_ "github.com/vigil-run/vigil/invariants"
	_ "github.com/vigil-run/vigil/plugins/calc"
	_ "github.com/vigil-run/vigil/plugins/fstools"
	_ "github.com/vigil-run/vigil/plugins/openai"
	_ "github.com/vigil-run/vigil/plugins/scripted"
	_ "github.com/vigil-run/vigil/plugins/stores"
)
