// Package approvals is the "approvals" plugin: a policy that decides, by
// rules, which tool calls run, which are refused and which wait for a
// person.
//
//	plugins:
//	  - name: approvals
//	    config:
//	      default: allow
//	      rules:
//	        - { tool: "read_file", action: ask }
//	        - { tool: "shell", arguments: "rm\\s+-rf", action: deny, reason: "no recursive deletes" }
//
// A rule matches a call when its tool glob (path.Match, as tools/mcp's
// include) matches the tool name and, when set, its arguments regexp
// (RE2, unanchored) matches the call's JSON arguments; the first matching
// rule decides, the default (allow when empty) decides the rest. It
// answers the agent loop's tool/approve hook, so built-in, MCP and
// external tools are covered alike: allow runs the call; deny answers it
// with a POLICY_DENIED result and the reason, which the model sees, and
// the turn goes on; ask logs an approval/request and suspends the step
// until a decision is given (agentloop.Decide, agentloop.Agent.Resume).
// An allow of scope session covers the later calls of the same tool that
// the same rule asks about (approval.Cover): the loop decides those itself,
// in logged decisions by session-rule citing it.
//
// The policy in force is logged as approval/policy (no turn) in each
// session it sees — the live sessions when it is mounted or its config
// changes, and every session before each turn (agent/prepare) — whenever
// it differs from the latest one logged, so `vigil verify` can evaluate
// every later call against it (rule approval-before-run). An invalid glob
// or regexp is a config error at the entry's file:line:col.
package approvals
