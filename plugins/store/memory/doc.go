// Package memory registers the session store plugin "store/memory":
// sessions kept in memory for as long as the plugin lives (see package
// session/memory for the store itself), for tests and demos. It provides
// the store as live.StoreService and a live.Manager over it as
// live.Sessions.
package memory
