package netio

import "kylix/core/kx"

// ConnectLoopback is Connect listening on 127.0.0.1 only, for the tests of netio_test (the
// transport suite), which run whole jobs in this process and must not listen on every interface.
func ConnectLoopback(o kx.Options) (*TCP, error) { return connect(o, "127.0.0.1") }
