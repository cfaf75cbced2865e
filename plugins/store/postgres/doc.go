// Package postgres registers the session store plugin "store/postgres":
// session logs in PostgreSQL (see package session/pgstore), shared by any
// number of Vigil processes.
//
//	plugins:
//	  - name: store/postgres
//	    config:
//	      dsn: "${VIGIL_POSTGRES_DSN}"   # a libpq URL or key=value string
//	      schema: vigil                  # optional: keep the tables in their own schema
//	      lease_ttl: 30s                 # optional: how long a crashed turn holds its session
//	      retention: { max_age: 720h }   # optional: delete sessions idle longer (vigil serve, vigil sessions prune)
//
// Like store/jsonl, it provides the store as live.StoreService and a
// live.Manager over it as live.Sessions. The tables are created or
// migrated when the plugin is applied (an unreachable database or a schema
// from a newer Vigil fails the apply); disposing the plugin closes every
// live session, then releases the store's turn leases and its
// connections.
package postgres
