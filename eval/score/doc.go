// Package score holds the scorers of `vigil eval`: what compares a
// candidate composition's turn with the recorded turn of a stored
// session and says how good it is.
//
// A scorer is a plugin, named in a suite file like a plugin in
// plugins.yaml: built in (exact, normalised, json_schema, regexp,
// contains, trajectory, cost, latency, judge) or out of process over the
// plugin protocol. Each is made by a [Factory] from its config and the
// [Env] of the eval run, and scores one [Pair] at a time.
package score
