// The express allreduce (express.c): kylix_allreduce of a small vector over the lanes, run in C
// while Go has lent a comm's lanes and sequence numbers out (core/express.go). Go fills the
// struct and publishes it by comm id; the C side runs collectives from it and hands anything
// else back to Go.
#ifndef KYLIX_EXPRESS_H
#define KYLIX_EXPRESS_H

#include <stdint.h>

// A comm whose lanes the express path may hold: up to this many ranks (one host's).
#define KX_EXPRESS_NODES 64
// Comm ids below this have a place in the table (ids count up from 1 and are never reused).
#define KX_EXPRESS_IDS 4096
// The largest vector the express path takes, in bytes (its scratch; a lane's payload is less).
#define KX_EXPRESS_BYTES 512
// Where a lane slot's payload starts (netio/shm/lane_loan.go: shm.LaneHead; checked in Go).
#define KX_LANE_HEAD 32

// state: who holds the comm's lanes and sequence numbers.
enum { KX_GO = 0, KX_ARMED = 1, KX_RUNNING = 2 };

// One peer's lane (kx.LaneLoan).
typedef struct kx_lane {
  uintptr_t put[2], look[2];  // this side's slots, the peer's
  uintptr_t ack, peer_ack, peer_sleep;
  uint64_t seq[2];     // the sequence last put in each of this side's slots
  uint64_t peer_acked; // at most the peer's acknowledgement
  uint64_t acked;      // this side's acknowledgement
  // counted here, given back to Go
  uint64_t sent, read, bytes_sent, bytes_read, wakes;
} kx_lane;

typedef struct kx_express {
  uint32_t state; // KX_GO, KX_ARMED or KX_RUNNING, atomic
  int32_t nodes, node;
  int32_t max;      // the largest vector in bytes
  int32_t spin;     // waits may spin (this host's ranks fit its CPUs); else they yield
  int32_t tsc;      // time with the CPU's counter (ticks), else CLOCK_MONOTONIC (ns)
  uint64_t kind;    // the fingerprint's kind (kx.KindAllreduce)
  int64_t patience; // how long a wait looks before handing the call to Go, in time's unit
  uint64_t seq;     // the next collective's sequence number
  uint64_t put_for; // seq+1 when this side put seq's messages and handed seq to Go
  uint64_t calls;   // allreduces completed here
  int64_t time;     // and their time, in ticks or ns
  kx_lane lane[KX_EXPRESS_NODES];
} kx_express;

// kx_express_publish makes ex the express state of comm id (NULL: none).
void kx_express_publish(uintptr_t id, kx_express *ex);

// kx_express_allreduce runs kylix_allreduce on comm id in C: 1 when it did (KYLIX_OK), 0 when
// the call is Go's (not armed, an argument or size it does not take, or a handover).
int kx_express_allreduce(uintptr_t id, const void *send, void *recv, int64_t count, int dtype,
                         int op);

#endif
