package main

// #include "express.h"
import "C"

import "kylix/netio/shm"

// the slot layout express.c assumes (a compile error where they differ)
const _ = uint(shm.LaneHead-C.KX_LANE_HEAD) + uint(C.KX_LANE_HEAD-shm.LaneHead)
