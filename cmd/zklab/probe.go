package main

import (
	"context"
	"sync/atomic"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes"
)

// herdStats counts what the herd effect costs, across the clients of one
// run.
// The counters are atomic for a real server, where clients run
// concurrently.
type herdStats struct {
	waiting       atomic.Int64 // tasks blocked in Wait now
	notifications atomic.Int64 // watch notifications Wait returned
	getChildren   atomic.Int64 // getChildren calls
	bytes         atomic.Int64 // bytes of children lists returned, as jute encodes them
}

// snapshot is the counters at one moment.
type herdCounts struct{ notifications, getChildren, bytes int64 }

func (s *herdStats) snapshot() herdCounts {
	return herdCounts{s.notifications.Load(), s.getChildren.Load(), s.bytes.Load()}
}

// probeConn wraps a client to count herd figures; everything else passes
// through.
type probeConn struct {
	recipes.Conn
	stats *herdStats
}

func (p probeConn) Wait(ctx context.Context, watches ...<-chan zk.Event) (zk.Event, error) {
	p.stats.waiting.Add(1)
	ev, err := p.Conn.Wait(ctx, watches...)
	p.stats.waiting.Add(-1)
	if err == nil && ev.Type != zk.EventNotWatching && ev.Type != zk.EventSession {
		p.stats.notifications.Add(1)
	}
	return ev, err
}

func (p probeConn) Children(ctx context.Context, path string) ([]string, *zk.Stat, error) {
	kids, stat, err := p.Conn.Children(ctx, path)
	p.count(kids)
	return kids, stat, err
}

func (p probeConn) ChildrenW(ctx context.Context, path string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	kids, stat, ch, err := p.Conn.ChildrenW(ctx, path)
	p.count(kids)
	return kids, stat, ch, err
}

func (p probeConn) count(kids []string) {
	n := int64(4) // the vector's length
	for _, k := range kids {
		n += 4 + int64(len(k))
	}
	p.stats.getChildren.Add(1)
	p.stats.bytes.Add(n)
}
