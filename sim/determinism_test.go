package sim

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// busyWorkload runs five clients doing random operations on a few paths,
// with watches, waits with timeouts, sleeps and every kind of fault, and
// returns the text trace, the history and the final tree: everything a
// run can show. All its choices come from the world's seeded source.
func busyWorkload(seed uint64) string {
	faults := []ScheduledFault{
		{AtStep: 40, Fault: Fault{Kind: FaultDropReply, Client: 1}},
		{AtStep: 90, Fault: Fault{Kind: FaultDropRequest, Client: 2}},
		{AtStep: 150, Fault: Fault{Kind: FaultDisconnect, Client: 3, Duration: 2 * time.Second}},
		{AtStep: 220, Fault: Fault{Kind: FaultPartition, Client: 4, Duration: 15 * time.Second}},
		{AtStep: 300, Fault: Fault{Kind: FaultPause, Client: 5, Duration: 12 * time.Second}},
		{AtStep: 420, Fault: Fault{Kind: FaultExpire, Client: 1}},
		{AtStep: 650, Fault: Fault{Kind: FaultCrash, Client: 2}},
		{AtTime: 9 * time.Second, Fault: Fault{Kind: FaultRestart, Duration: 3 * time.Second}},
	}
	w := New(Config{Seed: seed, KeepTrace: true, KeepHistory: true, Faults: faults})
	defer w.Close()
	paths := []string{"/a", "/a/x", "/a/y", "/b", "/b/s-"}
	for i := range 5 {
		c, err := w.NewClient(ClientConfig{SessionTimeout: time.Duration(4+i) * time.Second})
		if err != nil {
			panic(err)
		}
		w.Go(c, fmt.Sprintf("worker%d", i+1), func(ctx context.Context) {
			rng := w.Rand()
			for range 40 {
				p := paths[rng.IntN(len(paths))]
				switch rng.IntN(8) {
				case 0:
					flags := []int32{0, zk.FlagEphemeral, zk.FlagSequence, zk.FlagEphemeralSequential}[rng.IntN(4)]
					c.Create(ctx, p, []byte(c.GUID()[:4]), flags, acl)
				case 1:
					c.Delete(ctx, p, -1)
				case 2:
					c.Set(ctx, p, []byte{byte(rng.IntN(256))}, -1)
				case 3:
					_, _, ch, err := c.ExistsW(ctx, p)
					if err == nil {
						tctx, cancel := c.WithTimeout(ctx, time.Duration(rng.IntN(3000))*time.Millisecond)
						c.Wait(tctx, ch)
						cancel()
					}
				case 4:
					c.Children(ctx, "/a")
				case 5:
					c.Multi(ctx, &zk.CreateRequest{Path: p, Acl: acl}, &zk.SetDataRequest{Path: "/a", Version: -1})
				case 6:
					c.Sleep(ctx, time.Duration(rng.IntN(2000))*time.Millisecond)
				case 7:
					c.Get(ctx, p)
				}
			}
		})
	}
	var b strings.Builder
	if err := w.Run(); err != nil {
		fmt.Fprintf(&b, "run error: %v\n", err)
	}
	b.WriteString(w.TraceText())
	for _, o := range w.History() {
		fmt.Fprintf(&b, "op %d c%d %s %s -> %q %v [%d,%d]\n", o.ID, o.Client, o.Op, o.Path, o.OutPath, o.Err, o.CallStep, o.ReturnStep)
	}
	fmt.Fprintf(&b, "final zxid %#x nodes %d\n", w.Server().LastZxid(), w.Server().NodeCount())
	return b.String()
}

func digest(s string) string { return fmt.Sprintf("%x", sha256.Sum256([]byte(s))) }

// The same seed gives the same run, byte for byte: twice in this process
// and once in a separate process (which has its own map hash seeds, its
// own goroutine scheduling and, under -race, its own randomised runtime
// schedule).
func TestDeterminism(t *testing.T) {
	const seed = 42
	first := busyWorkload(seed)
	second := busyWorkload(seed)
	if first != second {
		t.Fatalf("two runs of seed %d differ in this process:\n%s", seed, firstDifference(first, second))
	}
	for _, kind := range []string{"session state=StateExpired", "watch", "lost", "server up again"} {
		if !strings.Contains(first, " "+kind) {
			t.Errorf("the workload never produced a %q event: it does not exercise what it should", kind)
		}
	}
	for _, kind := range FaultKinds {
		if !strings.Contains(first, " fault "+string(kind)) {
			t.Errorf("the workload never injected %s", kind)
		}
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestDeterminismChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "ZKLAB_DETERMINISM_SEED="+strconv.Itoa(seed))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child process: %v\n%s", err, out)
	}
	want := "digest " + digest(first) + "\n"
	if !strings.Contains(string(out), want) {
		t.Fatalf("the child process's run of seed %d differs: it printed\n%s\nwant %s", seed, out, want)
	}
	if other := busyWorkload(seed + 1); other == first {
		t.Fatal("seeds 42 and 43 gave the same run: the seed does not reach the choices")
	}
}

// TestDeterminismChild runs the workload for TestDeterminism in a separate
// process and prints its digest.
func TestDeterminismChild(t *testing.T) {
	s := os.Getenv("ZKLAB_DETERMINISM_SEED")
	if s == "" {
		t.Skip("run by TestDeterminism")
	}
	seed, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("digest %s\n", digest(busyWorkload(seed)))
}

func firstDifference(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d:\n  %s\n  %s", i+1, al[i], bl[i])
		}
	}
	return fmt.Sprintf("one run is longer: %d vs %d lines", len(al), len(bl))
}
