package score

// The built-in scorers, by the names suites give them.
func init() {
	Register("exact", newExact)
	Register("normalised", newNormalised)
	Register("json_schema", newJSONSchema)
	Register("regexp", newRegexp)
	Register("contains", newContains)
	Register("trajectory", newTrajectory)
	Register("cost", newCost)
	Register("latency", newLatency)
	Register("judge", newJudge)
	Register("plugin", newPlugin)
}
