package kx

import "time"

// Elastic membership (kylix_resize): the vocabulary core/members and netio share. Core agrees on
// who stays; the network side (netio's Grower) learns which joiners are waiting, from the job's
// join server, and connects the new membership. Placement rules live here because both the
// members and the join server (netio/rendezvous) must compute the same ranks.

// Grower is what a resize needs of the network to admit joiners. netio implements it over TCP.
type Grower interface {
	// JoinAddress is where joiners connect: the job's rendezvous (kylix_join_address).
	JoinAddress() string
	// Listen opens this member's listener for the mesh of the resized comm.
	Listen() (MeshListener, error)
	// Admit is the resize leader's one exchange with the join server: it admits the joiners
	// waiting now (waiting up to req.Wait for req.Need of them), tells them their ranks and
	// the table, and returns the new membership. With no joiner admitted, Admission.Joiners is 0
	// and nobody needs a new mesh. CodeTimeout: fewer than Need came within Wait.
	Admit(req AdmitRequest) (Admission, error)
}

// MeshListener is a member's listener for the mesh of a resized comm.
type MeshListener interface {
	Addr() string
	// Mesh connects rank of the admitted membership and returns its transport; it closes the
	// listener either way.
	Mesh(rank int, a Admission) (Transport, error)
	Close()
}

// AdmitRequest is what the leader of a resize tells the join server.
type AdmitRequest struct {
	// Members holds the kept members' listening addresses in their new order (with replication
	// s, slot k*m+j is replica k of kept node j); "" marks a dead replica whose slot a joiner
	// fills (a hole).
	Members []string
	Prev    []int // each slot's rank in the old comm
	Need    int   // joiners needed to reach min_size (0: take whoever waits, maybe nobody)
	// Replication s: joiners fill the holes (lowest node first), then form new nodes s at a time.
	Replication int
	Wait        time.Duration // how long to wait for Need joiners
	Liveness    time.Duration // a joiner that does not confirm its offer within this is passed over
	// The job's planning options, which joiners adopt so that every rank plans alike.
	Degrees   string
	Compress  string
	MinPacket int64
}

// Admission is the membership a resize with joiners agreed on.
type Admission struct {
	Peers       []string // every rank's address in the new comm
	Prev        []int    // every rank's rank in the old comm, -1 for a joiner
	Job         uint64   // the new mesh's job id (handshakes of other meshes are refused)
	Joiners     int
	Replication int
	Degrees     string
	Compress    string
	MinPacket   int64
}

// AdmitCount is how many of waiting joiners a resize admits, given holes (dead replicas of kept
// nodes) and replication s. Without replication, all of them. With replication, none unless
// every hole can be filled (a fresh mesh has no place for a dead member), then whole new nodes.
func AdmitCount(waiting, holes, s int) int {
	if s <= 1 {
		return waiting
	}
	if waiting < holes || (holes == 0 && waiting < s) {
		return 0
	}
	return holes + (waiting-holes)/s*s
}

// Place lays out the new membership: the kept members (req.Members, holes "") and the admitted
// joiners in arrival order. Without replication, survivors keep their order and joiners follow.
// With replication s, joiners fill holes lowest node first (then lowest replica), and the rest
// form new nodes after the kept ones, s at a time: rank k*m'+j is replica k of node j.
func Place(members []string, prev []int, s int, joiners []string) (peers []string, prevOut []int) {
	if s <= 1 {
		peers = append(append([]string(nil), members...), joiners...)
		prevOut = append([]int(nil), prev...)
		for range joiners {
			prevOut = append(prevOut, -1)
		}
		return peers, prevOut
	}
	m := len(members) / s
	slot := make([][]string, s) // slot[k][j]: replica k of node j
	pv := make([][]int, s)
	for k := 0; k < s; k++ {
		slot[k] = append([]string(nil), members[k*m:(k+1)*m]...)
		pv[k] = append([]int(nil), prev[k*m:(k+1)*m]...)
	}
	next := 0
	for j := 0; j < m; j++ {
		for k := 0; k < s; k++ {
			if slot[k][j] == "" && next < len(joiners) {
				slot[k][j], pv[k][j] = joiners[next], -1
				next++
			}
		}
	}
	for next+s <= len(joiners) {
		for k := 0; k < s; k++ {
			slot[k] = append(slot[k], joiners[next])
			pv[k] = append(pv[k], -1)
			next++
		}
	}
	for k := 0; k < s; k++ {
		peers = append(peers, slot[k]...)
		prevOut = append(prevOut, pv[k]...)
	}
	return peers, prevOut
}
