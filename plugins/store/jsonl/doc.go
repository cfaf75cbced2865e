// Package jsonl registers the session store plugin "store/jsonl": one
// JSONL log file per session in a directory (see package session/jsonl
// for the store itself).
//
//	plugins:
//	  - name: store/jsonl
//	    config:
//	      dir: .vigil/sessions   # the default
//	      retention: { max_age: 720h }   # optional: delete sessions idle longer (vigil serve, vigil sessions prune)
//
// It provides the store as live.StoreService and a live.Manager over
// it as live.Sessions; disposing the plugin closes every live session
// (flushing it) and then the store.
package jsonl
