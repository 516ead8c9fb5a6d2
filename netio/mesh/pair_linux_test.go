//go:build linux

package mesh

import "testing"

// The pairing rule: another host identity or another user means TCP (a real job across two
// users is not run here: this decision is what the set-up follows, and SO_PEERCRED is checked
// against the same uid on the unix socket).
func TestShmMatch(t *testing.T) {
	me, err := myShmHello()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := hostIdentity(); !ok {
		t.Skip("no host identity here (boot_id or the namespace links of /proc are unreadable): shm is never offered, so there is no decision to test")
	}
	if ok, same, _ := shmMatch(me, me); !ok || !same {
		t.Fatal("the same host and user do not match")
	}
	other := me
	other.uid++
	if ok, same, why := shmMatch(me, other); ok || !same {
		t.Fatalf("another user matched (%v %q)", ok, why)
	}
	other = me
	other.host[0] ^= 1
	if ok, same, _ := shmMatch(me, other); ok || same {
		t.Fatal("another host matched")
	}
	var none shmHello
	if ok, _, _ := shmMatch(none, none); ok {
		t.Fatal("an unknown host identity matched")
	}
}
