// Command doors holds the assignments through a record or a commit that
// a plugin could write before records were values: each line marked
// "door" must be a compile error, and nothing else is (see
// TestAssigningThroughARecordDoesNotCompile).
package main

import (
	"context"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

func main() {}

func observe(_ context.Context, cm live.Commit, log *session.Log, forged session.Record) {
	*cm.Record() = forged // door
	rec := cm.Record()
	*rec = forged                                       // door
	*rec.record = *forged.record                        // door
	cm.Record = func() session.Record { return forged } // door
	cm.c.record = forged                                // door
	*log.Records[0] = forged                            // door
	log.Records[0] = forged                             // the caller's own list
	rec = forged                                        // the listener's own copy
	_ = rec
}
