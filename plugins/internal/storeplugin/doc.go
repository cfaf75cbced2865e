// Package storeplugin is the body shared by the session store plugins
// (store/memory, store/jsonl, store/postgres): each provides its store as
// live.StoreService and a live.Manager over it as live.Sessions;
// disposing the plugin closes every live session (flushing it) and then
// the store.
package storeplugin
