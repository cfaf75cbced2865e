// Package all registers every built-in plugin: import it for its side
// effect, and every name in docs/architecture.md's table of built-in
// plugins resolves through bus.LookupModule.
//
//	import _ "github.com/vigil-run/vigil/plugins/all"
package all

import (
	_ "github.com/vigil-run/vigil/agentloop"          // agent
	_ "github.com/vigil-run/vigil/invariants"         // invariants
	_ "github.com/vigil-run/vigil/plugins/anthropic"  // provider/anthropic
	_ "github.com/vigil-run/vigil/plugins/calc"       // tools/calc
	_ "github.com/vigil-run/vigil/plugins/compaction" // compaction
	_ "github.com/vigil-run/vigil/plugins/external"   // external
	_ "github.com/vigil-run/vigil/plugins/fstools"    // tools/fs
	_ "github.com/vigil-run/vigil/plugins/mcptools"   // tools/mcp
	_ "github.com/vigil-run/vigil/plugins/openai"     // provider/openai
	_ "github.com/vigil-run/vigil/plugins/pgstore"    // store/postgres
	_ "github.com/vigil-run/vigil/plugins/replay"     // provider/replay
	_ "github.com/vigil-run/vigil/plugins/scripted"   // provider/scripted
	_ "github.com/vigil-run/vigil/plugins/stores"     // store/jsonl, store/memory
)
