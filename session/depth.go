package session

import (
	"cmp"
	"context"
	"slices"
)

// JobCount is how many unfinished jobs of one kind are in one state.
type JobCount struct {
	Kind  string
	State JobState
	N     int
}

// Depther is implemented by queues that count their unfinished jobs
// across every session at once (store/jsonl, store/postgres, the memory
// store), for a queue-depth gauge: an operator sees work pile up.
type Depther interface {
	// Depth returns the unfinished jobs counted by kind and state
	// ([JobQueued], [JobRunning]), sorted by kind then state; a kind and
	// state without jobs is left out.
	Depth(ctx context.Context) ([]JobCount, error)
}

// CountJobs counts jobs by kind and state, in Depth's order.
func CountJobs(jobs []Job) []JobCount {
	n := map[[2]string]int{}
	for _, j := range jobs {
		n[[2]string{j.Kind, string(j.State)}]++
	}
	out := make([]JobCount, 0, len(n))
	for k, c := range n {
		out = append(out, JobCount{Kind: k[0], State: JobState(k[1]), N: c})
	}
	slices.SortFunc(out, func(a, b JobCount) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.State, b.State))
	})
	return out
}
