package scenarios

// storeLatency is the virtual time a store operation takes: a read and a
// write are separate steps, so other clients run between them.
const storeLatencyMs = 1

// store is the protected resource: one value that every critical section
// reads and then, in a later step, writes plus one. With fencing it
// remembers the newest token it has seen, on a read or a write, and
// refuses an operation with an older one (Kleppmann). It lives outside
// ZooKeeper, in the simulation's memory, and is touched only by tasks,
// one at a time.
type store struct {
	fenced   bool
	value    int64
	maxToken int64
	// writes counts the writes it took; lost counts those that overwrote
	// a value other than the one their section read (lost updates).
	writes int64
	lost   []lostUpdate
}

// lostUpdate is a write that overwrote an update it never read.
type lostUpdate struct {
	client   int
	token    int64
	read     int64
	current  int64
	step     uint64
	previous int // the client whose write it overwrote
}

type storeLast struct{ client int }

func (s *store) read(token int64) (int64, bool) {
	if s.fenced {
		if token < s.maxToken {
			return 0, false
		}
		s.maxToken = token
	}
	return s.value, true
}

func (s *store) write(client int, token, read int64, step uint64, last *storeLast) bool {
	if s.fenced {
		if token < s.maxToken {
			return false
		}
		s.maxToken = token
	}
	if s.value != read {
		s.lost = append(s.lost, lostUpdate{client: client, token: token, read: read, current: s.value, step: step, previous: last.client})
	}
	s.value = read + 1
	s.writes++
	last.client = client
	return true
}
