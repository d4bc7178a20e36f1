package recipes_test

import (
	"context"
	"sync/atomic"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes"
)

// A probe wraps a client's Conn to watch what a recipe does with it: it
// counts the data calls (so a fault can be injected before the n-th), and
// counts the tasks blocked in Wait and the notifications Wait returned
// (the herd figures on a backend without a trace).
type probe struct {
	recipes.Conn
	base recipes.Conn
	// calls is the number of data calls so far.
	calls int
	// before, if set, runs before each data call with its number and its
	// operation ("create", "getW", ...).
	before func(n int, op string)
	// stats is shared by the probes of one test.
	stats *probeStats
}

type probeStats struct {
	waiting  atomic.Int64 // tasks inside Wait now
	notified atomic.Int64 // watch notifications Wait returned
}

func newProbe(c recipes.Conn, stats *probeStats) *probe {
	if stats == nil {
		stats = &probeStats{}
	}
	return &probe{Conn: c, base: c, stats: stats}
}

func (p *probe) tick(op string) {
	p.calls++
	if p.before != nil {
		p.before(p.calls, op)
	}
}

func (p *probe) Create(ctx context.Context, path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	p.tick("create")
	return p.Conn.Create(ctx, path, data, flags, acl)
}

func (p *probe) CreateContainer(ctx context.Context, path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	p.tick("createContainer")
	return p.Conn.CreateContainer(ctx, path, data, flags, acl)
}

func (p *probe) Delete(ctx context.Context, path string, version int32) error {
	p.tick("delete")
	return p.Conn.Delete(ctx, path, version)
}

func (p *probe) Exists(ctx context.Context, path string) (bool, *zk.Stat, error) {
	p.tick("exists")
	return p.Conn.Exists(ctx, path)
}

func (p *probe) ExistsW(ctx context.Context, path string) (bool, *zk.Stat, <-chan zk.Event, error) {
	p.tick("existsW")
	return p.Conn.ExistsW(ctx, path)
}

func (p *probe) Get(ctx context.Context, path string) ([]byte, *zk.Stat, error) {
	p.tick("get")
	return p.Conn.Get(ctx, path)
}

func (p *probe) GetW(ctx context.Context, path string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	p.tick("getW")
	return p.Conn.GetW(ctx, path)
}

func (p *probe) Set(ctx context.Context, path string, data []byte, version int32) (*zk.Stat, error) {
	p.tick("set")
	return p.Conn.Set(ctx, path, data, version)
}

func (p *probe) Children(ctx context.Context, path string) ([]string, *zk.Stat, error) {
	p.tick("children")
	return p.Conn.Children(ctx, path)
}

func (p *probe) ChildrenW(ctx context.Context, path string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	p.tick("childrenW")
	return p.Conn.ChildrenW(ctx, path)
}

func (p *probe) Multi(ctx context.Context, ops ...any) ([]zk.MultiResponse, error) {
	p.tick("multi")
	return p.Conn.Multi(ctx, ops...)
}

func (p *probe) Sync(ctx context.Context, path string) (string, error) {
	p.tick("sync")
	return p.Conn.Sync(ctx, path)
}

func (p *probe) Wait(ctx context.Context, watches ...<-chan zk.Event) (zk.Event, error) {
	p.stats.waiting.Add(1)
	ev, err := p.Conn.Wait(ctx, watches...)
	p.stats.waiting.Add(-1)
	if err == nil && ev.Type != zk.EventNotWatching {
		p.stats.notified.Add(1)
	}
	return ev, err
}
