package sim

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

func TestSmoke(t *testing.T) {
	w := New(Config{Seed: 1, KeepTrace: true, CheckEveryStep: true})
	c, err := w.NewClient(ClientConfig{SessionTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	w.Go(c, "worker", func(ctx context.Context) {
		p, err := c.Create(ctx, "/a", []byte("x"), 0, zk.WorldACL(zk.PermAll))
		got = append(got, p, errString(err))
		p, err = c.Create(ctx, "/a/s-", nil, zk.FlagEphemeralSequential, zk.WorldACL(zk.PermAll))
		got = append(got, p, errString(err))
		kids, st, err := c.Children(ctx, "/a")
		t.Logf("kids=%v stat=%+v err=%v", kids, st, err)
		_, err = c.Create(ctx, "/a", nil, 0, zk.WorldACL(zk.PermAll))
		got = append(got, errString(err))
	})
	if err := w.Run(); err != nil {
		t.Fatal(err)
	}
	t.Log(got)
	t.Log("\n" + w.TraceText())
}

func errString(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}
