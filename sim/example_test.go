package sim_test

import (
	"context"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zklab/zklab/sim"
)

// A reply lost after the server applied the request: the client sees its
// connection fail, and the node it was told nothing about is there.
func Example() {
	w := sim.New(sim.Config{Seed: 7})
	defer w.Close()
	c, err := w.NewClient(sim.ClientConfig{SessionTimeout: 4 * time.Second})
	if err != nil {
		panic(err)
	}
	w.Go(c, "worker", func(ctx context.Context) {
		if err := w.Inject(sim.Fault{Kind: sim.FaultDropReply, Client: 1}); err != nil {
			panic(err)
		}
		_, err := c.Create(ctx, "/lock", nil, 0, zk.WorldACL(zk.PermAll))
		fmt.Println("create:", err)
		ok, _, err := c.Exists(ctx, "/lock")
		fmt.Println("exists after the reconnect:", ok, err)
	})
	if err := w.Run(); err != nil {
		panic(err)
	}
	// Output:
	// create: zk: connection closed
	// exists after the reconnect: true <nil>
}
