// Package stats is what a comm reports in kylix_stats_json about its collectives, plans,
// layers, traffic, compression and replication: the types of the JSON (stats.go) and the
// Recorder that fills them (recorder.go), which the comm's data path calls for every message.
package stats
