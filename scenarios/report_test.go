package scenarios_test

import (
	"strings"
	"testing"

	"github.com/zklab/zklab/scenarios"
)

// The text timeline tells what happened to the clients as well as what
// they did: the fault, its end, and the expiry of the paused holder's
// session, each at its step, in order.
func TestTimelineShowsFaultsAndExpiries(t *testing.T) {
	sc, _, err := scenarios.LookupLibrary("split-brain-unfenced")
	if err != nil {
		t.Fatal(err)
	}
	res, err := scenarios.Replay(sc, scenarios.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h := res.History()
	at := -1
	for _, want := range []string{
		" c1 fault: pause c1 for=30s",
		" c1 session 0x19b76daa8000000 expired: the server closed it",
		" c2 acquired",
		" c1 fault: pause ended",
		" c1 store write 1",
	} {
		i := strings.Index(h, want)
		if i < 0 {
			t.Fatalf("the timeline has no %q:\n%s", want, h)
		}
		if i < at {
			t.Errorf("%q comes before what precedes it:\n%s", want, h)
		}
		at = i
	}
}
