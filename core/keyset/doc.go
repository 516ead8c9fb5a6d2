// Package keyset is the index-set half of the sparse allreduce, as pure functions over keys:
// the hash that spreads indices over the butterfly (Hash, Digit), sorting and deduplicating
// (SortUnique), the sorted union of several lists with each list's map into it (TreeMerge), the
// layer-0 partition of a rank's rows by destination bucket (PackLayer0) and the members' merge of
// what every sender partitioned (SortLayer0), the compressed coding of index lists and the
// config messages that carry them.
//
// "Layer 0" is the first layer of the butterfly, where each rank's own indices enter; it runs
// as the direct all-to-all, so its messages carry rows as the caller gave them, not sorted sets.
package keyset
