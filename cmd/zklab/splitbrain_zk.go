package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/zklab/zklab/recipes"
	"github.com/zklab/zklab/recipes/zkconn"
	"github.com/zklab/zklab/recipes/zkconn/zktest"
)

// The real-server split-brain: c1 reaches ZooKeeper through a local proxy
// that a pause blackholes, c2 directly.
const (
	zkSplitSessionTimeout = 4 * time.Second // the smallest a default server grants
	zkSplitPause          = 3 * zkSplitSessionTimeout
	zkSplitWait           = time.Minute
)

// fencedStore is the resource the lock protects: a counter read, then
// written. With fencing it refuses a write whose token is below the
// highest it has seen.
type fencedStore struct {
	mu      sync.Mutex
	fencing bool
	value   int
	highest int64
	writes  int
	refused int
}

func (s *fencedStore) read() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.value
}

func (s *fencedStore) write(v int, token int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fencing && token < s.highest {
		s.refused++
		return false
	}
	s.highest = max(s.highest, token)
	s.value = v
	s.writes++
	return true
}

// splitBrainOnZK tells the split-brain story on a real ZooKeeper. It
// reports whether the store lost an update.
func splitBrainOnZK(out io.Writer, servers string, fencing bool) (corrupted bool, err error) {
	b, err := newBackend(servers, 0)
	if err != nil {
		return false, err
	}
	zb := b.(*zkBackend)
	defer zb.Close()
	proxy, err := zktest.StartProxy(zb.servers[0])
	if err != nil {
		return false, usagef("--zk %s: splitbrain pauses c1 through a local proxy: %v", servers, err)
	}
	defer proxy.Close()
	c1, err := zkconn.Dial([]string{proxy.Addr()}, zkSplitSessionTimeout, zkconn.WithDialer(proxy.Dialer()))
	if err != nil {
		return false, err
	}
	defer c1.Close()
	ctx, cancel := context.WithTimeout(context.Background(), zkSplitWait)
	defer cancel()
	if err := c1.WaitConnected(ctx); err != nil {
		return false, fmt.Errorf("c1 through the proxy: %w", err)
	}
	c2conn, err := zb.NewClient(zkSplitSessionTimeout)
	if err != nil {
		return false, err
	}
	c2 := c2conn.(*zkconn.Conn)
	dir := zb.Root() + "/lock"
	st := &fencedStore{fencing: fencing}
	lock1 := recipes.NewFairLock(c1, dir)
	lock2 := recipes.NewFairLock(c2, dir)

	say(out, "on %s: c1 (through a local proxy) and c2, fair-lock, sessions of %v.", zb.Name(), zkSplitSessionTimeout)
	lease1, err := lock1.Acquire(ctx)
	if err != nil {
		return false, fmt.Errorf("c1 acquire: %w", err)
	}
	read1 := st.read()
	say(out, "c1 holds the lock (token %#x) and reads the store: %d", lease1.Token(), read1)
	say(out, "fault: c1's process stops for %v; the proxy blackholes its connection.", zkSplitPause)
	pauseEnd := time.Now().Add(zkSplitPause)
	proxy.Blackhole(zkSplitPause)
	c2done := make(chan error, 1)
	go func() {
		lease2, err := lock2.Acquire(ctx)
		if err != nil {
			c2done <- fmt.Errorf("c2 acquire: %w", err)
			return
		}
		v := st.read()
		ok := st.write(v+1, lease2.Token())
		say(out, "c2 gets the lock once ZooKeeper expires c1's session (token %#x), reads %d, writes %d: %v", lease2.Token(), v, v+1, okText(ok))
		c2done <- lease2.Release(ctx)
	}()
	if err := <-c2done; err != nil {
		return false, err
	}
	// c1's code stands still until its pause ends.
	time.Sleep(time.Until(pauseEnd))
	ok := st.write(read1+1, lease1.Token())
	say(out, "c1 wakes, still believing it holds the lock, and writes %d (token %#x): %v", read1+1, lease1.Token(), okText(ok))
	proxy.Heal()
	if err := lease1.Release(ctx); !errors.Is(err, recipes.ErrLeaseLost) {
		say(out, "c1's release: %v", err)
	} else {
		say(out, "c1's release: the lease was lost (its session expired while it was held).")
	}
	corrupted = st.writes == 2 && st.value == 1
	if fencing {
		say(out, "the fenced store refused %d stale write(s); value %d after %d writes: safe.", st.refused, st.value, st.writes)
	} else {
		say(out, "the store took both writes; value %d after %d writes: c2's update is lost.", st.value, st.writes)
	}
	return corrupted, nil
}

func okText(ok bool) string {
	if ok {
		return "accepted"
	}
	return "refused (stale token)"
}
