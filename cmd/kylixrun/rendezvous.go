package main

import (
	"kylix/netio/rendezvous"
	"time"
)

// rendezvousServer is the server ranks register with to learn each other's addresses.
type rendezvousServer interface {
	Addr() string
	Causes() map[int]rendezvous.Cause // the failure each rank reported last (netio/rendezvous/cause.go)
	Close() error
}

// startRendezvous serves the job's rendezvous on bind. timeout bounds each exchange with a rank,
// not the time ranks may take to start.
func startRendezvous(bind string, size int, secret string, timeout time.Duration) (rendezvousServer, error) {
	s, err := rendezvous.NewServer(bind, size, secret, timeout)
	if err != nil {
		return nil, err
	}
	return s, nil
}
