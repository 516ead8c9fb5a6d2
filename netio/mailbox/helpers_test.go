package mailbox

import "kylix/netio/internal/nettest"

var wantErr, within = nettest.WantErr, nettest.Within

var fpAll, fpRed = nettest.FPAll, nettest.FPRed
