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
