package rendezvous

import "kylix/netio/internal/nettest"

var wantErr, within, noLeak = nettest.WantErr, nettest.Within, nettest.NoLeak
