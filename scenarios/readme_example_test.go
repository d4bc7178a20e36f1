// README begin
package scenarios_test

import (
	"context"
	"errors"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes"
	"github.com/zklab/zklab/scenarios"
)

// brokenLock takes a lock node that exists for its own: two holders.
type brokenLock struct{ c recipes.Conn }

func (l brokenLock) Acquire(ctx context.Context) (scenarios.Lease, error) {
	_, err := l.c.Create(ctx, "/broken", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	if err != nil && !errors.Is(err, zk.ErrNodeExists) { // the bug: taken is not ours
		return nil, err
	}
	return scenarios.NodeLease(ctx, l.c, "/broken")
}

func TestBrokenLock(t *testing.T) {
	scenarios.Test(t, "broken-lock", func(c recipes.Conn, _ string, _ recipes.Options) scenarios.Lock {
		return brokenLock{c}
	}, scenarios.Options{Clients: 3, Runs: 200})
}

// README end
