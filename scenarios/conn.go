package scenarios

import (
	"context"
	"path"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes"
	"github.com/zklab/zklab/sim"
)

// observedConn is the recipes.Conn a workload hands its recipe: the
// simulated client, with the calls the herd figures and the dead-watch
// check need counted on the way.
type observedConn struct {
	*sim.Client
	w   *sim.World
	obs *observer
}

var _ recipes.Conn = (*observedConn)(nil)

// Create notes the directories where the recipe makes persistent nodes.
func (c *observedConn) Create(ctx context.Context, p string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	if flags&zk.FlagEphemeral == 0 {
		c.obs.persistentDirs[path.Dir(p)] = true
	}
	return c.Client.Create(ctx, p, data, flags, acl)
}

func (c *observedConn) count(names []string) {
	c.obs.childrenCalls++
	for _, n := range names {
		c.obs.bytesReturned += int64(len(n))
	}
}

func (c *observedConn) Children(ctx context.Context, p string) ([]string, *zk.Stat, error) {
	names, st, err := c.Client.Children(ctx, p)
	c.count(names)
	return names, st, err
}

func (c *observedConn) ChildrenW(ctx context.Context, p string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	names, st, ch, err := c.Client.ChildrenW(ctx, p)
	c.count(names)
	return names, st, ch, err
}

func (c *observedConn) Get(ctx context.Context, p string) ([]byte, *zk.Stat, error) {
	data, st, err := c.Client.Get(ctx, p)
	c.obs.bytesReturned += int64(len(data))
	return data, st, err
}

func (c *observedConn) GetW(ctx context.Context, p string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	data, st, ch, err := c.Client.GetW(ctx, p)
	c.obs.bytesReturned += int64(len(data))
	return data, st, ch, err
}

// ExistsW notes a watch that can never fire: an exists watch on a
// sequential node that is gone. ZooKeeper never hands out a sequence
// number twice, so nothing will create that node again.
func (c *observedConn) ExistsW(ctx context.Context, p string) (bool, *zk.Stat, <-chan zk.Event, error) {
	ok, st, ch, err := c.Client.ExistsW(ctx, p)
	if err == nil && !ok && sequentialName(path.Base(p)) {
		c.obs.deadWatches = append(c.obs.deadWatches, deadWatch{client: c.Number(), path: p, step: c.w.StepCount(), time: c.w.Now()})
	}
	return ok, st, ch, err
}

func sequentialName(name string) bool {
	if len(name) < 10 {
		return false
	}
	for _, r := range name[len(name)-10:] {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

type deadWatch struct {
	client int
	path   string
	step   uint64
	time   time.Duration
}
