// Package plugins links every built-in plugin: import it for its side
// effect, and every name `vigil plugins` lists resolves through
// bus.LookupModule.
//
//	import _ "github.com/vigil-run/vigil/plugins"
//
// Each plugin lives at its registered name below this directory
// (provider/openai in plugins/provider/openai, tools/fs in plugins/tools/fs,
// …), except agent, invariants and group, which live in the core packages
// that implement them (agentloop, invariants, config). A program that
// wants only some plugins imports those packages instead of this one. The
// protocol and SDK for out-of-process plugins are in plugins/external/proto
// and plugins/external/sdk; helpers the plugins share are in
// plugins/internal.
package plugins

import (
	_ "github.com/vigil-run/vigil/agentloop"                  // agent
	_ "github.com/vigil-run/vigil/config"                     // group
	_ "github.com/vigil-run/vigil/invariants"                 // invariants
	_ "github.com/vigil-run/vigil/plugins/approvals"          // approvals
	_ "github.com/vigil-run/vigil/plugins/budget"             // budget
	_ "github.com/vigil-run/vigil/plugins/compaction"         // compaction
	_ "github.com/vigil-run/vigil/plugins/external"           // external
	_ "github.com/vigil-run/vigil/plugins/provider/anthropic" // provider/anthropic
	_ "github.com/vigil-run/vigil/plugins/provider/openai"    // provider/openai
	_ "github.com/vigil-run/vigil/plugins/provider/replay"    // provider/replay
	_ "github.com/vigil-run/vigil/plugins/provider/scripted"  // provider/scripted
	_ "github.com/vigil-run/vigil/plugins/store/jsonl"        // store/jsonl
	_ "github.com/vigil-run/vigil/plugins/store/memory"       // store/memory
	_ "github.com/vigil-run/vigil/plugins/store/postgres"     // store/postgres
	_ "github.com/vigil-run/vigil/plugins/telemetry/otel"     // telemetry/otel
	_ "github.com/vigil-run/vigil/plugins/tools/a2a"          // tools/a2a
	_ "github.com/vigil-run/vigil/plugins/tools/calc"         // tools/calc
	_ "github.com/vigil-run/vigil/plugins/tools/fs"           // tools/fs
	_ "github.com/vigil-run/vigil/plugins/tools/mcp"          // tools/mcp
)
