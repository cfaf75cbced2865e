// Package storeplugin is the body shared by the session store plugins
// (store/memory, store/jsonl, store/postgres): each provides its store as
// session.StoreService and a session.Manager over it as session.Sessions;
// disposing the plugin closes every live session (flushing it) and then
// the store.
package storeplugin
