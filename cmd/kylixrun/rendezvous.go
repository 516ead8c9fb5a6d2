package main

import (
	"time"

	"kylix/netio"
)

// rendezvous is the server ranks register with to learn each other's addresses.
type rendezvous interface {
	Addr() string
	Causes() map[int]netio.Cause // the failure each rank reported last (netio/cause.go)
	Close() error
}

// startRendezvous serves the job's rendezvous on bind. timeout bounds each exchange with a rank,
// not the time ranks may take to start.
func startRendezvous(bind string, size int, secret string, timeout time.Duration) (rendezvous, error) {
	s, err := netio.NewRendezvousServer(bind, size, secret, timeout)
	if err != nil {
		return nil, err
	}
	return s, nil
}
