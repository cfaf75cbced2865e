// Package eval runs a suite of `vigil eval`: a corpus of stored
// sessions, a candidate composition and scorers. Each session's user
// turns are re-run through the candidate with the recorded model replies
// and tool results while its requests equal the recorded ones
// (replay.Against); from the first divergence on the candidate's own
// provider answers, and its tool calls are answered from the recording
// where the recording made the same call, else refused or run, as the
// suite says. Each recorded turn and the candidate's turn on the same
// prompt make a score.Pair that every scorer of the suite scores.
//
// The run is itself a session (the eval session): its records say what
// was run (eval/run), each pair's scores (eval/score) and each finished
// session (eval/case, citing its scores), and hold the judge's one-shots,
// so the run verifies and can be resumed or compared with another.
package eval
