package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/sim"
)

// registerModel is a one-value register, enough to make porcupine draw.
var registerModel = porcupine.Model{
	Init: func() any { return 0 },
	Step: func(state, input, output any) (bool, any) {
		in := input.([2]int) // {0: read, 1: write}, value
		if in[0] == 1 {
			return true, in[1]
		}
		return output.(int) == state.(int), state
	},
	DescribeOperation: func(input, output any) string {
		in := input.([2]int)
		if in[0] == 1 {
			return "write"
		}
		return "read"
	},
}

// A report opened in a browser shows one timeline lane per client and
// porcupine's drawing of the history.
func TestReportRendersInChromium(t *testing.T) {
	w := sim.New(sim.Config{Seed: 5, KeepTrace: true})
	defer w.Close()
	for i := range 3 {
		c, err := w.NewClient(sim.ClientConfig{SessionTimeout: 4 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		w.Go(c, "worker", func(ctx context.Context) {
			c.Create(ctx, "/lock", nil, zk.FlagEphemeral, worldACL)
			if i == 1 {
				w.Inject(sim.Fault{Kind: sim.FaultPartition, Client: 2, Duration: 10 * time.Second})
			}
			c.Sleep(ctx, time.Second)
		})
	}
	if err := w.Run(); err != nil {
		t.Fatal(err)
	}
	ops := []porcupine.Operation{
		{ClientId: 0, Input: [2]int{1, 1}, Call: 0, Output: 0, Return: 10},
		{ClientId: 1, Input: [2]int{0, 0}, Call: 5, Output: 1, Return: 15},
	}
	res, info := porcupine.CheckOperationsVerbose(registerModel, ops, time.Second)
	if res != porcupine.Ok {
		t.Fatalf("porcupine: %v", res)
	}
	var view bytes.Buffer
	if err := porcupine.Visualize(registerModel, info, &view); err != nil {
		t.Fatal(err)
	}
	var page bytes.Buffer
	err := writeReport(&page, report{
		Title: "test run", Verdict: "mutual-exclusion: pass", Clients: 3, Trace: w.Trace(),
		Holds: []holdInterval{{Client: 1, From: 5, To: 20, Token: 2}},
		Views: []porcupineView{{Title: "register", HTML: view.String()}, {Title: "again", HTML: view.String()}},
	})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(path, page.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if keep := os.Getenv("ZKLAB_KEEP_REPORT"); keep != "" {
		os.WriteFile(keep, page.Bytes(), 0o644)
	}
	dom := renderDOM(t, path)
	lanes := regexp.MustCompile(`<g class="lane" data-client="c(\d)"`).FindAllStringSubmatch(dom, -1)
	if len(lanes) != 3 {
		t.Errorf("the timeline has %d lanes, want 3", len(lanes))
	}
	for _, class := range []string{`class="hold"`, `class="request"`, `class="reply"`, `class="fault"`} {
		if !strings.Contains(dom, class) {
			t.Errorf("the timeline has no %s mark", class)
		}
	}
	// porcupine's script draws into #canvas once the page has run.
	if !regexp.MustCompile(`<div id="canvas"><svg`).MatchString(dom) {
		t.Errorf("porcupine's view did not render into #canvas:\n%s", excerpt(dom, `id="canvas"`))
	}
	if strings.Count(dom, `class="porcupine"`) != 1 {
		t.Error("the second porcupine view is not in its frame")
	}
}

func excerpt(s, near string) string {
	i := strings.Index(s, near)
	if i < 0 {
		return "(" + near + " not found)"
	}
	return s[i:min(len(s), i+300)]
}
