package sim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// The trace is readable as text and as JSON lines, and both say the same:
// every JSON line decodes to the event the text line renders.
func TestTraceTextAndJSONAgree(t *testing.T) {
	var text, jsonl bytes.Buffer
	w := New(Config{Seed: 3, KeepTrace: true, Trace: multiSink{TextTrace{&text}, JSONTrace{&jsonl}}})
	c, err := w.NewClient(ClientConfig{SessionTimeout: 4e9})
	if err != nil {
		t.Fatal(err)
	}
	w.Go(c, "worker", func(ctx context.Context) {
		c.Create(ctx, "/a", []byte("x"), 0, acl)
		w.Inject(Fault{Kind: FaultDropReply, Client: 1})
		c.Create(ctx, "/a/b", nil, 1, acl)
		c.Children(ctx, "/a")
	})
	run(t, w)
	if text.String() != w.TraceText() {
		t.Fatal("the streamed text trace differs from the kept one")
	}
	lines := strings.Split(strings.TrimRight(text.String(), "\n"), "\n")
	sc := bufio.NewScanner(&jsonl)
	i := 0
	for sc.Scan() {
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("JSON line %d: %v: %s", i+1, err, sc.Bytes())
		}
		if e.Text() != lines[i] {
			t.Fatalf("line %d: JSON says\n  %s\ntext says\n  %s", i+1, e.Text(), lines[i])
		}
		i++
	}
	if i != len(lines) || i < 20 {
		t.Fatalf("%d JSON lines for %d text lines", i, len(lines))
	}
	for _, kind := range []string{" fault ", " apply ", " recv ", " session "} {
		if !strings.Contains(text.String(), kind) {
			t.Errorf("trace has no %q event", kind)
		}
	}
}

type multiSink []TraceSink

func (m multiSink) Event(e Event) {
	for _, s := range m {
		s.Event(e)
	}
}

// kindsSink is a KindFilter that counts the events of each kind it gets.
type kindsSink struct {
	kinds []string
	got   map[string]int
}

func (s *kindsSink) TraceKinds() []string { return s.kinds }
func (s *kindsSink) Event(e Event)        { s.got[e.Kind]++ }

// A sink that reads only some kinds of event is spared the calls'
// "call", "send", "recv" and "return" events and the tasks' when it does
// not read them, and gets every other event as a sink of all kinds does:
// the same run, step for step. A history kept beside it still records
// every call.
func TestAKindFilterIsSparedTheKindsItDoesNotRead(t *testing.T) {
	runWith := func(sink TraceSink, keepHistory bool) (*World, uint64) {
		w := New(Config{Seed: 5, Trace: sink, KeepHistory: keepHistory})
		c, err := w.NewClient(ClientConfig{SessionTimeout: 4e9})
		if err != nil {
			t.Fatal(err)
		}
		w.Go(c, "worker", func(ctx context.Context) {
			c.Create(ctx, "/a", []byte("x"), 0, acl)
			c.Get(ctx, "/a")
			c.Delete(ctx, "/a", -1)
		})
		run(t, w)
		return w, w.StepCount()
	}
	all := &kindsSink{got: map[string]int{}}
	_, allSteps := runWith(all, false)
	some := &kindsSink{kinds: []string{"recv", "apply"}, got: map[string]int{}}
	w, someSteps := runWith(some, true)
	if someSteps != allSteps {
		t.Fatalf("the filtered run took %d steps, the full one %d", someSteps, allSteps)
	}
	left := map[string]bool{"call": true, "send": true, "return": true, "task": true}
	for kind := range left {
		if all.got[kind] == 0 {
			t.Errorf("the sink of all kinds got no %q event", kind)
		}
		if some.got[kind] != 0 {
			t.Errorf("the filtered sink got %d %q events", some.got[kind], kind)
		}
	}
	for kind, n := range all.got {
		if !left[kind] && some.got[kind] != n {
			t.Errorf("%q events: the filtered sink got %d, the sink of all kinds %d", kind, some.got[kind], n)
		}
	}
	if some.got["recv"] == 0 || some.got["apply"] == 0 {
		t.Errorf("the filtered sink missed kinds it reads: %v", some.got)
	}
	if ops := w.History(); len(ops) != 3 || !ops[2].Returned {
		t.Fatalf("history beside the filtered sink: %+v, want 3 returned calls", ops)
	}
	keep := &kindsSink{kinds: []string{"send"}, got: map[string]int{}}
	w = New(Config{Seed: 5, Trace: keep, KeepTrace: true})
	w.Close()
	if !w.trace.wants(kindCall) || !w.trace.wants(kindTask) {
		t.Error("a kept trace leaves out kinds its sink does not read")
	}
}
