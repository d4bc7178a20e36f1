package main

import (
	"context"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes"
)

// herdStats counts what the herd effect costs, across the clients of one
// run.
type herdStats struct {
	waiting       int // tasks blocked in Wait now
	notifications int // watch notifications Wait returned
	getChildren   int // getChildren calls
	bytes         int // bytes of children lists returned, as jute encodes them
}

// probeConn wraps a client to count herd figures; everything else passes
// through.
type probeConn struct {
	recipes.Conn
	stats *herdStats
}

func (p probeConn) Wait(ctx context.Context, watches ...<-chan zk.Event) (zk.Event, error) {
	p.stats.waiting++
	ev, err := p.Conn.Wait(ctx, watches...)
	p.stats.waiting--
	if err == nil && ev.Type != zk.EventNotWatching && ev.Type != zk.EventSession {
		p.stats.notifications++
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
	p.stats.getChildren++
	p.stats.bytes += 4 // the vector's length
	for _, k := range kids {
		p.stats.bytes += 4 + len(k)
	}
}
