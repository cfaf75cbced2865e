// Package budget is the "budget" plugin: limits on what a turn and a
// session may spend, and a stop for runaway loops.
//
//	plugins:
//	  - name: budget
//	    config:
//	      session: { tokens: 200000, cost: 2.50 }
//	      turn: { tokens: 50000, cost: 0.50, wall_clock: 5m }
//	      max_repeats: 3
//	      prices:
//	        gpt-4o-mini: { input: 0.15, output: 0.60 }
//
// Before each step of a turn (agentloop's agent/step, before the step's
// step/start is logged) it adds up the usage the log holds — every
// step/end's usage and every one-shot's request/usage (a compaction's
// summary), tokens being input plus output, priced per million tokens by
// the model of the request header in force at that step, or of the
// one-shot's own header — and refuses the step once a limit is reached:
//
//   - session.tokens, session.cost: the whole log, inherited records of a
//     fork and one-shots included;
//   - turn.tokens, turn.cost: the turn's steps;
//   - turn.wall_clock: the step would start this long or longer after
//     the turn's turn/start was logged (a step in progress is not cut);
//   - max_repeats (default 3, -1 for none): the turn's tool/call records
//     hold the same tool with byte-identical arguments that many times;
//   - a cost limit is set and the step's model has no price: refused
//     rather than unaccounted.
//
// A refused step logs nothing: the turn ends with turn/end
// {"reason":"budget","error":"budget: …"} naming the limit and what was
// spent, and agentloop.Agent.Run returns an *agentloop.BudgetError. The
// log verifies, and the session takes further turns (a session limit
// refuses each again until it is raised); a continuation
// (agentloop.Agent.Continue, `vigil run -s ID --continue`) carries the
// refused turn on as a new turn, with turn limits of its own.
//
// A step that passes gets its max_tokens capped to what remains of the
// tightest token limit, or of a cost limit at the model's output price,
// when that is lower than the agent's max_tokens. The cap is
// model-visible, so it is logged as any header is: the step logs a
// request/header (reason change) with the capped max_tokens before its
// request, the request carries exactly the logged header, and
// request/digest, the invariants plugin's request-header rule and
// `vigil verify` hold over it; the first uncapped step logs the agent's
// max_tokens again. Set the agent's max_tokens for the cap to change the
// header only near the end of a budget, not at every step.
//
// One-shot calls are outside turns: the session limits count them, the
// turn limits do not. The model a step or one-shot is priced by is the
// one its header logged, which names the provider's default model when
// the agent sets none (agentloop.DefaultModeler), so a provider-level
// `model` is priced like an agent-level one.
//
// Every decision reads only the log (and the clock, for wall_clock,
// against the logged turn/start time), so the log explains it: the
// turn/end records which limit fired and the header records each cap.
//
// [Tally] adds up a log's usage and cost per turn and in all; `vigil
// sessions show` and `vigil sessions list --json` report it, with the
// prices of the budget entry of the same plugins.yaml.
package budget
