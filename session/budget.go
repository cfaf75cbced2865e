package session

// BudgetStop is a step a limit refused: turn Turn ended with reason
// budget before its step Step started, Error being the turn/end's error.
type BudgetStop struct {
	Turn, Step int
	Error      string
}

// BudgetStops returns the steps records' limits refused, in log order:
// for each turn/end with reason budget, the step after the last one its
// turn started. A replay refuses the same steps with the same errors to
// end those turns as the log did, whatever limits it runs with (a
// wall-clock limit cannot fire the same way twice). It is a pure fold of
// the log.
func BudgetStops(records []Record) []BudgetStop {
	var out []BudgetStop
	last := map[int]int{} // turn → its last step/start
	for _, r := range records {
		switch r.Type() {
		case TypeStepStart:
			last[r.Turn()] = max(last[r.Turn()], r.Step())
		case TypeTurnEnd:
			if e, err := DecodeData[TurnEnd](r); err == nil && e.Reason == ReasonBudget {
				out = append(out, BudgetStop{Turn: r.Turn(), Step: last[r.Turn()] + 1, Error: e.Error})
			}
		}
	}
	return out
}
