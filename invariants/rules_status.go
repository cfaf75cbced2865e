package invariants

// Agent statuses as the agent loop reports them.
const (
	statusNone     = ""
	statusIdle     = "idle"
	statusRunning  = "running"
	statusDisposed = "disposed"
)

// statusTransition: only idle ↔ running and idle or running → disposed (a
// new agent appears as none → idle); no repeated status; nothing leaves
// disposed. last is the status the plugin saw last for the agent, "" for
// an agent it has not seen.
func statusTransition(agent, last, from, to string) *Violation {
	v := func(format string, args ...any) *Violation {
		x := violation(RuleStatusTransition, -1, format, args...)
		x.Session = agent
		return x
	}
	// An agent the plugin has not seen yet (new, or met after a hot
	// reload) may start from any status it claims.
	if last != statusNone && from != last {
		return v("transition %s → %s, but the agent was %s", show(from), show(to), show(last))
	}
	if from == to {
		return v("repeated status %s", show(to))
	}
	switch {
	case from == statusDisposed:
		return v("transition out of disposed to %s", show(to))
	case from == statusNone && to == statusIdle,
		from == statusIdle && to == statusRunning,
		from == statusRunning && to == statusIdle,
		(from == statusIdle || from == statusRunning) && to == statusDisposed:
		return nil
	}
	return v("illegal transition %s → %s", show(from), show(to))
}

func show(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
