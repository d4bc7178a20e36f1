package scenarios

import (
	"context"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/sim"
	"pgregory.net/rapid"
)

// observedServer is a world of the standalone server, scheduled in order
// (firstStrategy), whose observer's tree follows its server.
func observedServer(clients int) (*observer, *sim.World) {
	obs := newObserver(false, clients)
	w := sim.New(sim.Config{Seed: 1, Strategy: firstStrategy{}, Trace: obs, MaxTime: time.Hour})
	obs.w, obs.tree.server = w, w.Server()
	return obs, w
}

// TestServerTreeFollowsTheServer: the tree the checks read is the
// server's own: a node's life begins at the create the server applied
// (a sequential node under its real name), ends at the delete the server
// applied (not at one it refused), and an ephemeral's life ends when its
// session is closed by its client or expired by the server.
func TestServerTreeFollowsTheServer(t *testing.T) {
	obs, w := observedServer(2)
	open := zk.WorldACL(zk.PermAll)
	c1, _ := w.NewClient(sim.ClientConfig{SessionTimeout: 2 * time.Second})
	c2, _ := w.NewClient(sim.ClientConfig{SessionTimeout: 2 * time.Second})
	var seq string
	w.Go(c1, "c1", func(ctx context.Context) {
		must := func(_ string, err error) {
			if err != nil {
				t.Errorf("c1: %v", err)
			}
		}
		must(c1.Create(ctx, "/d", nil, 0, open))
		must(c1.Create(ctx, "/d/e", nil, zk.FlagEphemeral, open))
		name, err := c1.Create(ctx, "/d/s-", nil, zk.FlagEphemeral|zk.FlagSequence, open)
		must(name, err)
		seq = name
		if err := c1.Delete(ctx, seq, 5); err != zk.ErrBadVersion {
			t.Errorf("delete with a wrong version: %v", err)
		}
		if err := c1.Delete(ctx, seq, -1); err != nil {
			t.Errorf("delete: %v", err)
		}
		c1.Close()
	})
	w.Go(c2, "c2", func(ctx context.Context) {
		if err := c2.Sleep(ctx, 100*time.Millisecond); err != nil {
			return
		}
		if _, err := c2.Create(ctx, "/d/x", nil, zk.FlagEphemeral, open); err != nil {
			t.Errorf("c2: %v", err)
		}
		if err := w.Inject(sim.Fault{Kind: sim.FaultExpire, Client: 2}); err != nil {
			t.Errorf("expire: %v", err)
		}
		c2.Sleep(ctx, time.Second)
	})
	if err := w.RunFor(10 * time.Second); err != nil && err != sim.ErrDeadlock {
		t.Fatal(err)
	}
	obs.tree.flush()
	w.Close()
	life := func(p string) *znodeLife {
		for _, z := range obs.tree.lives {
			if z.path == p {
				return z
			}
		}
		t.Fatalf("no life of %s in %d lives", p, len(obs.tree.lives))
		return nil
	}
	if z := life("/d"); !z.created || z.creator != 1 || z.owner != 0 || z.ended {
		t.Errorf("/d: %+v", *z)
	}
	if z := life(seq); !z.created || z.owner == 0 || !z.ended || z.endOp != "delete" || z.endedBy != 1 || z.endStep <= z.createStep {
		t.Errorf("%s: %+v", seq, *z)
	}
	if z := life("/d/e"); !z.ended || z.endOp != "closeSession" || z.endedBy != 1 {
		t.Errorf("/d/e, ended at its session's close: %+v", *z)
	}
	if z := life("/d/x"); !z.created || z.creator != 2 || !z.ended || z.endOp != "expiry" || z.endedBy != 0 {
		t.Errorf("/d/x, ended at its session's expiry: %+v", *z)
	}
}

// On an ensemble the tree sees a node first in the committed view, with
// no request event of its own: the creator is the client whose session's
// request made the transaction, not c0.
func TestServerTreeNamesCreatorsOnAnEnsemble(t *testing.T) {
	obs := newObserver(false, 2)
	w := sim.New(sim.Config{Seed: 1, Servers: 3, Trace: obs, MaxTime: time.Hour})
	obs.w, obs.tree.server = w, w.Server()
	obs.followEnsemble(w)
	open := zk.WorldACL(zk.PermAll)
	c1, _ := w.NewClient(sim.ClientConfig{SessionTimeout: 4 * time.Second})
	c2, _ := w.NewClient(sim.ClientConfig{SessionTimeout: 4 * time.Second})
	w.Go(c1, "c1", func(ctx context.Context) {
		if _, err := c1.Create(ctx, "/d", nil, 0, open); err != nil {
			t.Errorf("c1: %v", err)
		}
	})
	if err := w.Run(); err != nil {
		t.Fatal(err)
	}
	w.Go(c2, "c2", func(ctx context.Context) {
		for _, p := range []struct {
			path  string
			flags int32
		}{{"/d/e", zk.FlagEphemeral}, {"/d/p", 0}} {
			if _, err := c2.Create(ctx, p.path, nil, p.flags, open); err != nil {
				t.Errorf("c2 %s: %v", p.path, err)
			}
		}
	})
	if err := w.RunFor(5 * time.Second); err != nil && err != sim.ErrDeadlock {
		t.Fatal(err)
	}
	obs.tree.flush()
	w.Close()
	want := map[string]int{"/d": 1, "/d/e": 2, "/d/p": 2}
	for _, z := range obs.tree.lives {
		if c, ok := want[z.path]; ok {
			if !z.created || z.creator != c {
				t.Errorf("%s: created %v by c%d, want by c%d", z.path, z.created, z.creator, c)
			}
			delete(want, z.path)
		}
	}
	if len(want) > 0 {
		t.Errorf("no lives of %v", want)
	}
}

// The tree's dirOf and slashOf, which reuse what they found for the
// path before when a path begins as it did, are parentDir and sim.LastSlash.
func TestTreeDirOfIsParentDir(t *testing.T) {
	piece := rapid.SampledFrom([]string{"/", "/", "a", "b", ".", "..", "lock-", "0000000001"})
	rapid.Check(t, func(t *rapid.T) {
		tree := newServerTree()
		for range rapid.IntRange(1, 20).Draw(t, "paths") {
			p := strings.Join(rapid.SliceOfN(piece, 0, 6).Draw(t, "pieces"), "")
			if rapid.Bool().Draw(t, "slash") {
				if got, want := tree.slashOf(p), sim.LastSlash(p); got != want {
					t.Fatalf("slashOf(%q) = %d after %q, sim.LastSlash says %d", p, got, tree.dirPrefix, want)
				}
				continue
			}
			if got, want := tree.dirOf(p), parentDir(p); got != want {
				t.Fatalf("dirOf(%q) = %q after %q, parentDir says %q", p, got, tree.dirPrefix, want)
			}
		}
	})
}

// parentDir is path.Dir for every path, clean or not, and sim.LastSlash
// strings.LastIndexByte's slash; sim.JoinPath is
// path.Join for a clean directory and a name the server could list, and
// sim.SplitPath takes such a path apart again.
func TestTreePathsArePathPackages(t *testing.T) {
	for _, p := range []string{"/", "/a", "/a/b", "/a/b/", "/dir/lock-", "/a//b", "/a/./b", "/a/../b", "/a/.", "/a/..", "a/b", "./a/b", "", "/.a/b", "/a.b/c"} {
		if got, want := parentDir(p), path.Dir(p); got != want {
			t.Errorf("parentDir(%q) = %q, path.Dir says %q", p, got, want)
		}
	}
	piece := rapid.SampledFrom([]string{"/", "a", "b", ".", "..", "lock-", "0000000001"})
	rapid.Check(t, func(t *rapid.T) {
		p := strings.Join(rapid.SliceOfN(piece, 0, 8).Draw(t, "pieces"), "")
		if got, want := parentDir(p), path.Dir(p); got != want {
			t.Fatalf("parentDir(%q) = %q, path.Dir says %q", p, got, want)
		}
		if got, want := sim.LastSlash(p), strings.LastIndexByte(p, '/'); got != want {
			t.Fatalf("sim.LastSlash(%q) = %d, strings.LastIndexByte says %d", p, got, want)
		}
		dir := path.Clean("/" + p)
		name := rapid.StringMatching(`[a-z0-9-]{1,12}`).Draw(t, "name")
		if got, want := sim.JoinPath(dir, name), path.Join(dir, name); got != want {
			t.Fatalf("sim.JoinPath(%q, %q) = %q, path.Join says %q", dir, name, got, want)
		}
		if got, want := string(sim.AppendPath([]byte("x"), dir, name)), "x"+path.Join(dir, name); got != want {
			t.Fatalf("sim.AppendPath(\"x\", %q, %q) = %q, want %q", dir, name, got, want)
		}
		if gotDir, gotName := sim.SplitPath(path.Join(dir, name)); gotDir != dir || gotName != name {
			t.Fatalf("sim.SplitPath(%q) = %q, %q; want %q, %q", path.Join(dir, name), gotDir, gotName, dir, name)
		}
	})
}

// A create's look narrows to the node it made only when every other child
// of its directory has a life already; otherwise it looks at the whole
// directory, as it must when the directory's children came from a multi
// before any create went there, or when a multi deleted a node and made
// another of the same name.
func TestServerTreeCreateLooksAtTheWholeDirectoryWhenItMust(t *testing.T) {
	obs, w := observedServer(1)
	open := zk.WorldACL(zk.PermAll)
	c, _ := w.NewClient(sim.ClientConfig{SessionTimeout: 10 * time.Second})
	w.Go(c, "c1", func(ctx context.Context) {
		must := func(err error) {
			if err != nil {
				t.Errorf("c1: %v", err)
			}
		}
		create := func(p string) { _, err := c.Create(ctx, p, nil, 0, open); must(err) }
		create("/d")
		// /m/a comes from a multi, before /m is a create's directory.
		_, err := c.Multi(ctx, &zk.CreateRequest{Path: "/m", Acl: open}, &zk.CreateRequest{Path: "/m/a", Acl: open})
		must(err)
		create("/m/b")
		create("/m/x")
		// A multi ends /m/x's life and makes another /m/x.
		_, err = c.Multi(ctx, &zk.DeleteRequest{Path: "/m/x", Version: -1}, &zk.CreateRequest{Path: "/m/x", Acl: open})
		must(err)
		create("/m/y")
		create("/m/z")
	})
	if err := w.Run(); err != nil {
		t.Fatal(err)
	}
	obs.tree.flush()
	w.Close()
	lives := map[string][]*znodeLife{}
	for _, z := range obs.tree.lives {
		lives[z.path] = append(lives[z.path], z)
	}
	for _, p := range []string{"/d", "/m", "/m/a", "/m/b", "/m/y", "/m/z"} {
		if len(lives[p]) != 1 || lives[p][0].ended {
			t.Errorf("%s: want one life, not ended; have %d", p, len(lives[p]))
		}
	}
	if x := lives["/m/x"]; len(x) != 2 || !x[0].ended || x[1].ended || x[0].czxid == x[1].czxid {
		t.Errorf("/m/x: want an ended life and a live one of another node; have %d", len(x))
	}
	if z := lives["/m/z"]; len(z) != 1 || !z[0].created || z[0].creator != 1 {
		t.Errorf("/m/z: want a life created by c1")
	}
}
