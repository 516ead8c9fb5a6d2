package rendezvous

import "kylix/netio/internal/nettest"

var (
	wantErr = nettest.WantErr
	within  = nettest.Within
	noLeak  = nettest.NoLeak
)
