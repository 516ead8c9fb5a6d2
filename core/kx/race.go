package kx

// RacePeerStats are the racing copies received from one peer.
type RacePeerStats struct {
	Rank       int    `json:"rank"`
	CopiesWon  uint64 `json:"copies_won"`
	CopiesLost uint64 `json:"copies_lost"`
	DupBytes   uint64 `json:"duplicate_bytes"`
}
