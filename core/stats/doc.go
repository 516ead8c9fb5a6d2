// Package stats is the shape of kylix_stats_json: what a comm reports about its collectives,
// plans, layers, traffic, compression and replication. The comm's recorder (core/stats.go)
// fills it; this package holds only the types, so tools and tests can read the JSON without the
// algorithms.
package stats
