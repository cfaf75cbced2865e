// Package server is Vigil's HTTP API: sessions, queued turns, event
// streams (JSONL, or server-sent events resumable with Last-Event-ID),
// approvals, cancellation, verification, health and metrics, under /v1,
// described by the OpenAPI 3.1 document it serves at /openapi.json.
//
// The server runs no turn itself: a posted turn (or decision) is queued
// in the composition's store ([session.Queue]) and run by a worker
// ([vigil.Runtime.Work]) in this process or any other sharing the store.
// Events are read from the store, so a client streaming a session sees
// every event whichever worker appended it.
//
// It is safe by default: with tokens every request but /healthz and
// /openapi.json needs one (Authorization: Bearer), request bodies are
// bounded, cross-origin requests are refused unless origins are named,
// and every error is a JSON body with a stable code ([Error]).
package server
