// Package a2aserve offers the agents of a composition to A2A clients
// (the Agent2Agent protocol, over JSON-RPC through the A2A Go SDK,
// github.com/a2aproject/a2a-go): each agent has its agent card ([Server.Card])
// and its endpoint ([Server.Handler]).
//
// A task is a turn queued in the store's durable queue, run by any
// worker sharing the store: message/send queues it
// ([vigil.Runtime.QueueTurn]) in a new session, or in the session its
// contextId names (the context of a task is its session), and the task's
// id is "<session>.<job>", so any process that reads the store finds it,
// after a restart too. Its state is read from the queue and the log
// ([Server] never keeps one): submitted while the job waits, working while
// it runs (or a worker carries on a turn another left), input-required
// while the turn waits for approvals, then completed, failed or canceled
// as the turn ended (a continuation after a crash is followed). A task
// is answerable while the queue keeps its job (session.FinishedJobTTL);
// its log stays.
//
// message/stream streams the turn's chunks as artifact updates of the
// "answer" artifact, then the whole answer and the final status.
// input-required is answered by a message on the task: "allow" or
// "deny [reason]" as text, or a data part {"allow": bool, "reason",
// "call"}, each queued as a decision ([vigil.Runtime.QueueDecision]),
// the path the API's decisions take. tasks/cancel cancels the session's
// work ([vigil.Runtime.CancelSession]), the API's cancel.
//
// Every answer carries its receipt ([agentsrv.Receipt]) in the task's
// metadata, and in the final status update's, under [agentsrv.MetaKey].
package a2aserve
