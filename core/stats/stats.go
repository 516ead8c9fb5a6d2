package stats

import (
	"kylix/core/kx"
	"kylix/core/planning"
)

// Traffic counts data messages: payload bytes and messages, each way.
type Traffic struct {
	BytesSent uint64 `json:"bytes_sent"`
	BytesRecv uint64 `json:"bytes_recv"`
	MsgsSent  uint64 `json:"msgs_sent"`
	MsgsRecv  uint64 `json:"msgs_recv"`
}

// Add accumulates u into t.
func (t *Traffic) Add(u Traffic) {
	t.BytesSent += u.BytesSent
	t.BytesRecv += u.BytesRecv
	t.MsgsSent += u.MsgsSent
	t.MsgsRecv += u.MsgsRecv
}

// PlanSeconds is the time a plan's collectives spent in each phase, in seconds. Config's time
// includes the degrees=auto agreement and the final merge; a reduce's down phase runs from its
// start to its first message going up, the up phase from there to its end.
type PlanSeconds struct {
	Config           float64 `json:"config"`
	ReduceDown       float64 `json:"reduce_down"`
	ReduceUp         float64 `json:"reduce_up"`
	ConfigReduceDown float64 `json:"config_reduce_down"`
	ConfigReduceUp   float64 `json:"config_reduce_up"`
}

// PhaseSeconds is PlanSeconds summed over every plan (live and retired), plus the dense
// allreduce.
type PhaseSeconds struct {
	PlanSeconds
	Dense float64 `json:"dense"`
}

// PlanCalls counts a plan's collectives. Errors counts those that failed on this rank.
type PlanCalls struct {
	Config       uint64 `json:"config"`
	Reduce       uint64 `json:"reduce"`
	ConfigReduce uint64 `json:"config_reduce"`
	Errors       uint64 `json:"errors"`
}

// LayerTraffic is the traffic of one butterfly layer of a plan, by collective and direction.
type LayerTraffic struct {
	Config           Traffic `json:"config"`
	ReduceDown       Traffic `json:"reduce_down"`
	ReduceUp         Traffic `json:"reduce_up"`
	ConfigReduceDown Traffic `json:"config_reduce_down"`
	ConfigReduceUp   Traffic `json:"config_reduce_up"`
}

// IndexBytes are the index-list bytes of a layer's config messages (config and config_reduce)
// before compression (raw: 8 per key) and as they travelled (wire), each way. Ratio is raw/wire
// of what this rank sent (1 when it sent nothing or compressed nothing).
type IndexBytes struct {
	RawSent  uint64  `json:"raw_sent"`
	WireSent uint64  `json:"wire_sent"`
	RawRecv  uint64  `json:"raw_recv"`
	WireRecv uint64  `json:"wire_recv"`
	Ratio    float64 `json:"ratio"`
}

func (x *IndexBytes) Add(raw, wire int, sent bool) {
	if sent {
		x.RawSent += uint64(raw)
		x.WireSent += uint64(wire)
	} else {
		x.RawRecv += uint64(raw)
		x.WireRecv += uint64(wire)
	}
}

func (x IndexBytes) WithRatio() IndexBytes {
	x.Ratio = 1
	if x.WireSent > 0 {
		x.Ratio = float64(x.RawSent) / float64(x.WireSent)
	}
	return x
}

// LayerStats describes layer Layer of a plan on this rank: the keys (unique indices) this rank
// held above the layer, sent to the other members of its group (the rest it keeps), received
// from them, and held below the layer after merging, and the traffic of the layer.
type LayerStats struct {
	Layer        int `json:"layer"`
	Degree       int `json:"degree"`
	OutKeysAbove int `json:"out_keys_above"`
	InKeysAbove  int `json:"in_keys_above"`
	OutKeysSent  int `json:"out_keys_sent"`
	InKeysSent   int `json:"in_keys_sent"`
	OutKeysRecv  int `json:"out_keys_recv"`
	InKeysRecv   int `json:"in_keys_recv"`
	OutKeysBelow int `json:"out_keys_below"`
	InKeysBelow  int `json:"in_keys_below"`
	LayerTraffic
	Index IndexBytes `json:"index_bytes"`
}

// PlanStats is one plan's record.
type PlanStats struct {
	ID         uint32       `json:"id"`
	CreatedBy  string       `json:"created_by"` // "config" or "config_reduce"
	Configured bool         `json:"configured"` // false: its configuration failed
	Freed      bool         `json:"freed"`
	Degrees    []int        `json:"degrees"`
	NOut       int          `json:"n_out"` // the caller's indices, repeats included
	NIn        int          `json:"n_in"`
	OutKeys    int          `json:"out_keys"` // unique indices on this rank
	InKeys     int          `json:"in_keys"`
	BottomOut  int          `json:"bottom_out_keys"` // keys held below the last layer
	BottomIn   int          `json:"bottom_in_keys"`
	Calls      PlanCalls    `json:"calls"`
	Seconds    PlanSeconds  `json:"seconds"`
	Agree      Traffic      `json:"agree"` // degrees=auto agreement exchange
	Links      Traffic      `json:"links"` // link measurement run by this plan's config
	Layers     []LayerStats `json:"layers"`
}

// RetiredStats aggregates the plans whose records were dropped to bound memory.
type RetiredStats struct {
	Plans   int            `json:"plans"`
	Calls   PlanCalls      `json:"calls"`
	Seconds PlanSeconds    `json:"seconds"`
	Agree   Traffic        `json:"agree"`
	Layers  []LayerTraffic `json:"layers"`
}

// KindStats counts the collectives of one kind.
type KindStats struct {
	Calls   uint64  `json:"calls"`
	Errors  uint64  `json:"errors"`
	Seconds float64 `json:"seconds"`
	Traffic Traffic `json:"traffic"`
}

// CompressionStats sum the index bytes of every config message (IndexBytes) since the last
// reset. Active: some message travelled compressed. Ratio is raw/wire of what this rank sent.
type CompressionStats struct {
	Option string `json:"option"`
	Active bool   `json:"active"`
	IndexBytes
	Note string `json:"note"`
}

// Stats is a snapshot of a comm's statistics; StatsJSON is its JSON form.
type Stats struct {
	Version       int                  `json:"version"`
	Rank          int                  `json:"rank"`
	Size          int                  `json:"size"`
	DegreesOption string               `json:"degrees_option"`
	Degrees       []int                `json:"degrees"` // fixed degrees; null for auto
	Threads       int                  `json:"threads"` // worker threads of the data path
	Kernels       string               `json:"kernels"` // SIMD level dispatched: avx512, avx2 or go
	Options       StatsOptions         `json:"options"` // the options in effect
	SinceUnix     float64              `json:"since_unix_s"`
	Compression   CompressionStats     `json:"compression"`
	Links         *planning.Links      `json:"links"` // measured link model; null before
	Totals        Traffic              `json:"totals"`
	PhaseSeconds  PhaseSeconds         `json:"phase_seconds"`
	Collectives   map[string]KindStats `json:"collectives"`
	Plans         []PlanStats          `json:"plans"`
	Retired       RetiredStats         `json:"retired_plans"`
	Replication   ReplicationStats     `json:"replication"` // stats_replicas.go
	Shm           *kx.ShmStats         `json:"shm"`         // null on a transport without shared memory
	// Generation changes whenever the figures may: at a collective's end, a plan freed, a reset.
	Generation uint64 `json:"-"`
}

// StatsOptions are the comm's options in effect, as kylix_init parsed them.
type StatsOptions struct {
	TimeoutMS   int64  `json:"timeout_ms"`
	LivenessMS  int64  `json:"liveness_ms"`
	Threads     int    `json:"threads"`
	Log         string `json:"log"`
	MinPacket   int64  `json:"min_packet"`
	Replication int    `json:"replication"`
	Compress    string `json:"compress"`
	Shm         string `json:"shm"`
	Degrees     string `json:"degrees"`
}

// ReplicationStats (kylix_stats_json "replication"): the job's replication and, per peer, the
// racing copies this rank received from it (netio/mailbox/race.go): copies won (used), copies lost
// (dropped because another replica's copy was first) and the bytes of the lost copies that
// were read, the price of replication in duplicate traffic. Peers are numbered as the
// comm's ranks (a comm made by kylix_shrink numbers its survivors 0..k-1).
type ReplicationStats struct {
	Replicas    int                `json:"replicas"` // s
	Nodes       int                `json:"nodes"`    // size/s
	Node        int                `json:"node"`     // this rank's node
	FailedRanks []int              `json:"failed_ranks"`
	CopiesWon   uint64             `json:"copies_won"`
	CopiesLost  uint64             `json:"copies_lost"`
	DupBytes    uint64             `json:"duplicate_bytes"`
	Peers       []kx.RacePeerStats `json:"peers"` // only peers with copies; null without replication
}
