package scenarios

import (
	"time"

	"github.com/zklab/zklab/sim"
)

// shapeFor gives the exploration of a recipe what its flaw needs to show,
// beyond the defaults. old-session-latch leads on its old session's node
// only after a disconnect longer than a connection timeout (a quarter of
// the session timeout) and shorter than the session timeout, and the harm
// shows only if it still leads when the old session expires: a term of
// seconds, and a store that takes a stale leader's write. The faults are
// disconnects alone, so that a correct leader-latch explored the same way
// stays clean (a pause longer than the session would split any leader's
// brain).
func shapeFor(recipe string, o ExploreOptions) ExploreOptions {
	if recipe == "old-session-latch" {
		o.Store = StoreUnfenced
		o.Faults = []sim.FaultKind{sim.FaultDisconnect}
		o.Hold = 5 * time.Second
	}
	return o
}
