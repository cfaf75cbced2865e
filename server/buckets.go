package server

import (
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// SecondsBuckets are the bucket bounds of every histogram measured in
// seconds: from a fast API call (5 ms) to a long turn (10 min). The SDK's
// default bounds (0 to 10000) are for milliseconds: in seconds they put
// every request in the first buckets.
var SecondsBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// secondsView gives every histogram whose unit is "s" SecondsBuckets,
// whoever makes it on [Metrics.Meter].
var secondsView = sdkmetric.NewView(
	sdkmetric.Instrument{Kind: sdkmetric.InstrumentKindHistogram, Unit: "s"},
	sdkmetric.Stream{Aggregation: sdkmetric.AggregationExplicitBucketHistogram{Boundaries: SecondsBuckets}},
)
