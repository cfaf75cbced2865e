// Package approval is the approval policy engine: it decides, where the
// log model in package session only describes. The records it reads and
// writes (approval/policy, approval/request, approval/decision), the
// suspended step they leave (session.Suspended) and the errors a refused
// decision is told with are the log's, in session; this package holds
// what acts on them:
//
//   - [Compile] and [Matcher]: a policy's rules, in order, against a call's
//     tool name and arguments; the first rule that matches decides it
//     (allow, deny or ask), else the default does.
//   - [Cover], [CoverOf], [Covering] and [CoveredBy]: which later calls an
//     allowing decision of scope session ("always for this session")
//     answers, so that the loop logs their decisions itself, each citing
//     the one it rests on, and verify can check every citation from the
//     log alone.
//   - [CheckDecision]: whether a person's decision may be logged for a
//     call, and the approval/decision event that records it.
//
// The loop (agentloop) asks and resumes, verify (invariants) checks a log
// against the same code, and the runtime (vigil) and the API check a
// decision with it before they queue or log it. Like session, it knows no
// bus and no live session: everything here is a function of records.
package approval
