// Package stores registers the session store plugins "store/memory" and
// "store/jsonl". Each provides the store as session.StoreService and a
// session.Manager over it as session.Sessions; disposing the plugin closes
// every live session (flushing it) and then the store.
package stores
