package netio

import "kylix/netio/internal/nettest"

var (
	wantErr = nettest.WantErr
	within  = nettest.Within
	noLeak  = nettest.NoLeak
	fpAll   = nettest.FPAll
	fpRed   = nettest.FPRed
)
