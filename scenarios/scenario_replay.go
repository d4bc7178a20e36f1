package scenarios

import (
	"fmt"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
)

// replayLines are what a scenario file of a user's own recipe holds
// beyond the workload, so that it replays as it ran:
//
//	lock rwlock
//	go-test example.com/mylock TestMyLock
type replayLines struct {
	// Lock is the lock's model the checks hold the recipe to: mutex,
	// rwlock or semaphore (with Leases). Empty for zklab's own recipes,
	// whose model the recipe decides.
	Lock string
	// GoTest is the package and the test that found the failure, whose
	// constructor builds the recipe: "PACKAGE TEST" (scenarios.Test
	// writes it; its -zklab.replay flag replays the file).
	GoTest string
}

// lockModels are the models a lock line may name.
var lockModels = []string{"mutex", "rwlock", "semaphore"}

func (s *Scenario) renderReplay(key string) ([]string, bool) {
	switch key {
	case "lock":
		return []string{"lock " + s.Lock}, s.Lock != ""
	case "go-test":
		return []string{"go-test " + s.GoTest}, s.GoTest != ""
	}
	return nil, false
}

// parseReplay parses a line of replayLines; known is false for a key that
// is not one of them.
func (s *Scenario) parseReplay(key, rest string) (known bool, err error) {
	switch key {
	case "lock":
		if !slices.Contains(lockModels, rest) {
			return true, fmt.Errorf("lock: want one of %s, got %q", strings.Join(lockModels, ", "), rest)
		}
		s.Lock = rest
		return true, nil
	case "go-test":
		pkg, test, ok := strings.Cut(rest, " ")
		if !ok || pkg == "" || !strings.HasPrefix(test, "Test") || strings.ContainsAny(test, " \t") {
			return true, fmt.Errorf("go-test: want PACKAGE TestName, got %q", rest)
		}
		s.GoTest = rest
		return true, nil
	}
	return false, nil
}

// ReplayCommand is the go test command that replays file, a scenario of
// a user's own recipe, with the constructor of the test that found it;
// "" when the scenario does not say which test that was. go test runs
// the test in its package's directory: a relative file is taken from
// there.
func ReplayCommand(sc *Scenario, file string) string {
	pkg, test, ok := strings.Cut(sc.GoTest, " ")
	if !ok {
		return ""
	}
	if file == "" {
		file = "FILE"
	}
	return fmt.Sprintf("go test %s -run '%s' -count=1 -zklab.replay %s", pkg, runPattern(test), file)
}

// runPattern is the -run pattern of exactly the test named (subtests'
// names separated by slashes).
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// UserRecipe says, for a scenario whose recipe is not one of zklab's,
// how to replay it: in go test, with the user's constructor.
func UserRecipe(sc *Scenario, file string) string {
	if abs, err := filepath.Abs(file); err == nil && file != "" {
		file = abs // the command may run elsewhere
	}
	if cmd := ReplayCommand(sc, file); cmd != "" {
		return fmt.Sprintf("recipe %s is a user's own, not one of zklab's: replay it with its constructor, in go test: %s", Cut(sc.Recipe), cmd)
	}
	return fmt.Sprintf("recipe %s is not one of zklab's (see zklab recipes); a user's own recipe replays in go test, through scenarios.Test's -zklab.replay FILE flag or scenarios.ReplayFile with RunOptions.Recipe", Cut(sc.Recipe))
}

// callerPackage is the import path of the package whose function called
// the function that calls it (an external test package's is its
// package's).
func callerPackage(skip int) string {
	pc, _, _, ok := runtime.Caller(skip + 1)
	if !ok {
		return ""
	}
	fn := runtime.FuncForPC(pc)
	if fn == nil {
		return ""
	}
	name := fn.Name() // example.com/a/b_test.TestX.func1
	slash := strings.LastIndexByte(name, '/')
	dot := strings.IndexByte(name[slash+1:], '.')
	if dot < 0 {
		return ""
	}
	return strings.TrimSuffix(name[:slash+1+dot], "_test")
}
