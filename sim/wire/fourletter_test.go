package wire_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/zklab/zklab/sim"
	"github.com/zklab/zklab/sim/wire"
)

func answer(f *wire.FourLetterWords, word string) string {
	var b bytes.Buffer
	f.Answer(word, &b)
	return b.String()
}

// The whitelist decides which words are answered, as
// 4lw.commands.whitelist does on ZooKeeper 3.5+: srvr alone by default.
func TestFourLetterWordsWhitelist(t *testing.T) {
	srv := wire.New(sim.NewServer(sim.ServerConfig{}), wire.Config{})
	defer srv.Close()
	f := &wire.FourLetterWords{Server: srv, Epoch: time.Now()}
	if got := answer(f, "ruok"); got != "ruok is not executed because it is not in the whitelist.\n" {
		t.Errorf("ruok by default: %q", got)
	}
	if got := answer(f, "srvr"); !strings.HasPrefix(got, "Zookeeper version: "+wire.ServerVersion+"\nLatency min/avg/max: 0/0.0/0\n") ||
		!strings.HasSuffix(got, "Zxid: 0x0\nMode: standalone\nNode count: 5\n") {
		t.Errorf("srvr on a fresh server:\n%s", got)
	}
	f.Whitelist = []string{"ruok", "isro"}
	if got := answer(f, "ruok") + answer(f, "isro"); got != "imokrw" {
		t.Errorf("ruok, isro: %q", got)
	}
	if got := answer(f, "srvr"); !strings.HasPrefix(got, "srvr is not executed") {
		t.Errorf("srvr not whitelisted: %q", got)
	}
	f.Whitelist = []string{"*"}
	for _, w := range []string{"stat", "mntr", "envi", "conf", "cons", "dump", "wchs", "wchc", "wchp"} {
		if got := answer(f, w); got == "" || strings.Contains(got, "not executed") {
			t.Errorf("%s with *: %q", w, got)
		}
	}
	if got := answer(f, "zzzz"); got != "" {
		t.Errorf("an unknown word: %q, want nothing", got)
	}
}
