package zkconntest

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/zklab/zklab/sim"
	"github.com/zklab/zklab/sim/wire"
)

// A Scenario is a run of a program on unmodified *zk.Conn clients: how
// many clients, how many cycles each, and the faults, each keyed to one
// client's session and the n-th request of a type it sends.
type Scenario struct {
	Name           string
	Clients        int
	Cycles         int
	SessionTimeout time.Duration
	Faults         []Fault
	// GoTest is the test that found it; Found the seed and run.
	GoTest, Found string
}

// A Fault is a keyed fault on a client's first session.
type Fault struct {
	Client   int
	Op       sim.OpCode
	Request  int
	Action   wire.FaultAction
	Duration time.Duration
}

func (f Fault) String() string {
	s := fmt.Sprintf("client %d %s #%d %s", f.Client, f.Op, f.Request, f.Action)
	if f.Action == wire.FaultPartition {
		s += " " + f.Duration.String()
	}
	return s
}

// fileNote says, in every scenario file, what a replay repeats.
const fileNote = `# A zkconntest scenario: unmodified go-zookeeper *zk.Conn clients on the
# in-process simulated server (sim/inproc), on testing/synctest's virtual time.
# Reproduced on replay: the clients, their sessions (ids and passwords), and
# each fault, which the server fires on the named client's session at its
# n-th request of that type; every server-side choice follows from the order
# requests arrive. Not reproduced byte for byte: that order where clients send
# at the same virtual instant (go-zookeeper's goroutines, ordered by the Go
# scheduler), and the GUIDs in protected node names (crypto/rand). A replay
# fails as the run did as long as the failure does not hang on such a race.
`

// Format writes a scenario file; cmd, if set, is its replay command.
func Format(sc *Scenario, cmd string) string {
	var b strings.Builder
	if cmd != "" {
		fmt.Fprintf(&b, "# replay: %s\n", cmd)
	}
	if sc.Found != "" {
		fmt.Fprintf(&b, "# found: %s\n", sc.Found)
	}
	b.WriteString(fileNote)
	fmt.Fprintf(&b, "program %s\n", sc.Name)
	fmt.Fprintf(&b, "clients %d\n", sc.Clients)
	fmt.Fprintf(&b, "cycles %d\n", sc.Cycles)
	fmt.Fprintf(&b, "session-timeout %v\n", sc.SessionTimeout)
	if sc.GoTest != "" {
		fmt.Fprintf(&b, "go-test %s\n", sc.GoTest)
	}
	for _, f := range sc.Faults {
		fmt.Fprintf(&b, "fault %s\n", f)
	}
	return b.String()
}

// ParseFile reads a scenario file.
func ParseFile(file string) (*Scenario, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return Parse(file, string(data))
}

var opByName = func() map[string]sim.OpCode {
	m := map[string]sim.OpCode{}
	for _, op := range faultOps {
		m[op.String()] = op
	}
	return m
}()

// Parse reads a scenario file's text; name is the file's, for errors
// (name:line: what is wrong).
func Parse(name, text string) (*Scenario, error) {
	sc := &Scenario{}
	for i, line := range strings.Split(text, "\n") {
		fail := func(format string, args ...any) error {
			return fmt.Errorf("%s:%d: %s", name, i+1, fmt.Sprintf(format, args...))
		}
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		w := strings.Fields(line)
		switch w[0] {
		case "program":
			if len(w) != 2 {
				return nil, fail("want: program NAME")
			}
			sc.Name = w[1]
		case "clients", "cycles":
			if len(w) != 2 {
				return nil, fail("want: %s N", w[0])
			}
			n, err := strconv.Atoi(w[1])
			if err != nil || n < 1 || n > 100 {
				return nil, fail("%s %q: want a number from 1 to 100", w[0], w[1])
			}
			if w[0] == "clients" {
				sc.Clients = n
			} else {
				sc.Cycles = n
			}
		case "session-timeout":
			d, err := time.ParseDuration(strings.Join(w[1:], ""))
			if err != nil || d <= 0 {
				return nil, fail("session-timeout %q: want a duration such as 10s", strings.Join(w[1:], " "))
			}
			sc.SessionTimeout = d
		case "go-test":
			if len(w) != 2 {
				return nil, fail("want: go-test TESTNAME")
			}
			sc.GoTest = w[1]
		case "fault":
			f, err := parseFault(w[1:])
			if err != nil {
				return nil, fail("%v", err)
			}
			sc.Faults = append(sc.Faults, f)
		default:
			return nil, fail("unknown directive %q (want program, clients, cycles, session-timeout, go-test or fault)", w[0])
		}
	}
	if sc.Name == "" || sc.Clients == 0 || sc.Cycles == 0 || sc.SessionTimeout == 0 {
		return nil, fmt.Errorf("%s: a scenario needs program, clients, cycles and session-timeout lines", name)
	}
	for _, f := range sc.Faults {
		if f.Client >= sc.Clients {
			return nil, fmt.Errorf("%s: fault %s: there are only %d clients", name, f, sc.Clients)
		}
	}
	return sc, nil
}

// parseFault reads "client N OP #K ACTION [DURATION]".
func parseFault(w []string) (Fault, error) {
	const want = "want: fault client N OP #K ACTION [DURATION], e.g. fault client 0 getChildren #1 lose-reply"
	if len(w) < 5 || len(w) > 6 || w[0] != "client" || !strings.HasPrefix(w[3], "#") {
		return Fault{}, fmt.Errorf("%s", want)
	}
	var f Fault
	var err error
	if f.Client, err = strconv.Atoi(w[1]); err != nil || f.Client < 0 {
		return Fault{}, fmt.Errorf("client %q: want a client number from 0", w[1])
	}
	op, ok := opByName[w[2]]
	if !ok {
		return Fault{}, fmt.Errorf("request type %q: want create, delete, exists, getData, setData, getChildren, getChildrenNoStat, multi, create2 or sync", w[2])
	}
	f.Op = op
	if f.Request, err = strconv.Atoi(w[3][1:]); err != nil || f.Request < 1 {
		return Fault{}, fmt.Errorf("request %q: want #1, #2, ...", w[3])
	}
	if f.Action, err = wire.ParseFaultAction(w[4]); err != nil {
		return Fault{}, err
	}
	if f.Action == wire.FaultPartition {
		if len(w) != 6 {
			return Fault{}, fmt.Errorf("a partition needs its duration, e.g. 20s")
		}
		if f.Duration, err = time.ParseDuration(w[5]); err != nil || f.Duration <= 0 {
			return Fault{}, fmt.Errorf("partition duration %q: want a duration such as 20s", w[5])
		}
	} else if len(w) == 6 {
		return Fault{}, fmt.Errorf("%s takes no duration", f.Action)
	}
	return f, nil
}
