package wire_test

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/zklab/zklab/sim"
	"github.com/zklab/zklab/sim/wire"
)

// memberState is member i's entry of MemberStates.
func memberState(srv *wire.EnsembleServer, i int) wire.MemberState { return srv.MemberStates()[i-1] }

// Overlapping faults on a member end with the last of them, as in the
// simulated world; HEAL ends them all and no earlier timer ends a later
// fault; a crash ends ServeMember with ErrMemberCrashed and a fault's
// restart calls Restarted.
func TestEnsembleServerFaultsEndWithTheLast(t *testing.T) {
	restarted := make(chan int, 4)
	srv := wire.NewEnsemble(sim.NewEnsemble(sim.ServerConfig{}, 3), wire.EnsembleConfig{
		Restarted: func(i int) { restarted <- i }})
	defer srv.Close()

	start := time.Now()
	if err := srv.Lag(1, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := srv.Lag(1, 900*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500*time.Millisecond - time.Since(start))
	if !memberState(srv, 1).Lagging {
		t.Fatal("s1's lag ended with the first of two overlapping lags")
	}
	time.Sleep(1200*time.Millisecond - time.Since(start))
	if memberState(srv, 1).Lagging {
		t.Fatal("s1 still lags after both lags ended")
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.ServeMember(2, ln) }()
	// A connection served shows ServeMember has taken the listener.
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	for deadline := time.Now().Add(5 * time.Second); len(srv.Member(2).Conns()) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("s2 never served a connection")
		}
	}
	if err := srv.CrashServer(2, 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := <-served; !errors.Is(err, wire.ErrMemberCrashed) {
		t.Fatalf("ServeMember of a crashed member: %v, want ErrMemberCrashed", err)
	}
	srv.HealServers()
	if st := memberState(srv, 2); st.Mode == "down" {
		t.Fatalf("s2 after HEAL: %+v", st)
	}
	if i := <-restarted; i != 2 {
		t.Fatalf("Restarted(%d), want 2", i)
	}
	if err := srv.CrashServer(2, 0); err != nil { // until healed
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond) // past the first crash's end
	if st := memberState(srv, 2); st.Mode != "down" || st.DownEnds.Year() < 10000 {
		t.Fatalf("s2 crashed until healed, after an earlier crash's end: %+v", st)
	}
	if was, err := srv.RestartServer(2); !was || err != nil {
		t.Fatalf("RestartServer(2): %v, %v", was, err)
	}
	if err := srv.Lag(4, time.Second); !errors.Is(err, wire.ErrNoMember) {
		t.Fatalf("Lag(4) of 3 members: %v, want ErrNoMember", err)
	}
}
