package recipes

import "slices"

// Options tune the recipes a registry constructor builds; the zero value
// gives each recipe's default.
type Options struct {
	// Leases is the number of holders a semaphore admits (semaphore
	// only); 0 means 1.
	Leases int
	// Read asks rw-lock and herd-rw-lock for their read side; the default
	// is the write side.
	Read bool
	// Members are the lock directories multi-lock takes together; by
	// default path/0 and path/1.
	Members []string
}

// A Recipe is a lock recipe the CLI and the testbed find by name.
type Recipe struct {
	// Name is the canonical name, as in the docs.
	Name string
	// Summary is one line on what it is.
	Summary string
	// Source is where the algorithm comes from: seed documents, Curator,
	// kazoo.
	Source string
	// Flaw is empty for a correct recipe; for a flawed variant it is the
	// mistake it makes, and what the testbed should see.
	Flaw string
	// Servers, for a flawed variant, is the ensemble size on which its
	// flaw shows (0: a single server shows it): exploration looks for it
	// there.
	Servers int
	// New builds one client's handle on the lock at path.
	New func(c Conn, path string, o Options) Lock
	// Election marks a leader election: its lease is a term of
	// leadership, and the checks speak of leaders rather than holders.
	Election bool
}

// Flawed reports whether the recipe is a flawed variant, for teaching.
func (r Recipe) Flawed() bool { return r.Flaw != "" }

var registry = []Recipe{
	{
		Name:    "exclusive-lock",
		Summary: "one ephemeral node per lock; waiters watch it, so every release wakes them all",
		Source:  "seeds 001 and 003 (exclusive lock)",
		New:     func(c Conn, p string, _ Options) Lock { return NewExclusiveLock(c, p) },
	},
	{
		Name:    "herd-lock",
		Summary: "ephemeral-sequential queue; waiters watch the children (the herd)",
		Source:  "seed 002's first algorithm, seed 004's ordinary lock",
		New:     func(c Conn, p string, _ Options) Lock { return NewHerdLock(c, p) },
	},
	{
		Name:    "fair-lock",
		Summary: "ephemeral-sequential queue with protected names; each waiter watches its predecessor",
		Source:  "seed 000, seed 002's improved algorithm, seed 004's improved lock, ZooKeeper's lock recipe",
		New:     func(c Conn, p string, _ Options) Lock { return NewFairLock(c, p) },
	},
	{
		Name:    "reentrant-mutex",
		Summary: "fair-lock, reentrant for its handle with a hold count",
		Source:  "Curator InterProcessMutex",
		New:     func(c Conn, p string, _ Options) Lock { return NewReentrantMutex(c, p) },
	},
	{
		Name:    "semaphore-mutex",
		Summary: "a semaphore of one lease: a mutex that is not reentrant",
		Source:  "Curator InterProcessSemaphoreMutex",
		New:     func(c Conn, p string, _ Options) Lock { return NewSemaphoreMutex(c, p) },
	},
	{
		Name:    "semaphore",
		Summary: "at most N holders: a gate lock and lease nodes, no herd",
		Source:  "Curator InterProcessSemaphoreV2, kazoo Semaphore",
		New:     func(c Conn, p string, o Options) Lock { return NewSemaphore(c, p, o.Leases) },
	},
	{
		Name:    "rw-lock",
		Summary: "read/write lock; a reader watches the last lower write node, a writer the last lower node",
		Source:  "seed 003's improved shared lock, Curator InterProcessReadWriteLock",
		New:     func(c Conn, p string, o Options) Lock { return rwSideOf(NewRWLock(c, p), o) },
	},
	{
		Name:    "herd-rw-lock",
		Summary: "read/write lock whose waiters all watch the children",
		Source:  "seed 003's first shared lock",
		New:     func(c Conn, p string, o Options) Lock { return rwSideOf(NewHerdRWLock(c, p), o) },
	},
	{
		Name:    "multi-lock",
		Summary: "several reentrant mutexes taken as one, all or nothing",
		Source:  "Curator InterProcessMultiLock",
		New: func(c Conn, p string, o Options) Lock {
			members := o.Members
			if len(members) == 0 {
				members = []string{p + "/0", p + "/1"}
			}
			return NewMultiLock(c, members)
		},
	},
	{
		Name:     "leader-latch",
		Summary:  "leader election: protected ephemeral-sequential candidates, the lowest leads, each watches its predecessor with getData",
		Source:   "Curator LeaderLatch",
		New:      func(c Conn, p string, _ Options) Lock { return NewLeaderLatch(c, p) },
		Election: true,
	},
	{
		Name:     "leader-selector",
		Summary:  "leader election on the reentrant mutex: leadership given up when the leader's work ends",
		Source:   "Curator LeaderSelector",
		New:      func(c Conn, p string, _ Options) Lock { return NewLeaderSelector(c, p) },
		Election: true,
	},
	{
		Name:     "election",
		Summary:  "leader election: ephemeral-sequential n_ candidates, each watching the next lower (with get, as kazoo does)",
		Source:   "ZooKeeper's recipes page (leader election), kazoo Election",
		New:      func(c Conn, p string, _ Options) Lock { return NewElection(c, p) },
		Election: true,
	},
	{
		Name:     "herd-election",
		Summary:  "election whose candidates all watch the children (the herd)",
		Source:   "ZooKeeper's recipes page on the herd effect",
		New:      func(c Conn, p string, _ Options) Lock { return NewHerdElection(c, p) },
		Election: true,
	},
	{
		Name:    "sync-resume-lock",
		Summary: "fair-lock that syncs before each listing it decides on, so that a lagging follower cannot hide its own node or a lost session",
		Source:  "the Programmer's Guide on sync (Consistency Guarantees); the correct twin of stale-resume-lock (issue 13)",
		New:     func(c Conn, p string, _ Options) Lock { return NewSyncResumeLock(c, p) },
	},
	{
		Name:    "persistent-lock",
		Summary: "fair-lock with PERSISTENT nodes",
		Source:  "seed 000's warning on PERSISTENT nodes",
		Flaw:    "a holder that crashes leaves its node forever, and everyone after it waits forever",
		New:     func(c Conn, p string, _ Options) Lock { return NewPersistentLock(c, p) },
	},
	{
		Name:    "unprotected-lock",
		Summary: "fair-lock without the GUID in its node names",
		Source:  "seed 004's guid-lock- name, ZooKeeper's recipe notes on the GUID",
		Flaw:    "after a create whose reply was lost it creates a second node; the first is orphaned and blocks the queue for the session's life",
		New:     func(c Conn, p string, _ Options) Lock { return NewUnprotectedLock(c, p) },
	},
	{
		Name:    "lost-wakeup-lock",
		Summary: "fair-lock that waits on an exists watch even when the predecessor is gone",
		Source:  "seed 002 on reading and watching in one call",
		Flaw:    "a predecessor that leaves between the listing and the watch leaves a creation watch that never fires: the waiter sleeps on a free lock",
		New:     func(c Conn, p string, _ Options) Lock { return NewLostWakeupLock(c, p) },
	},
	{
		Name:     "old-session-latch",
		Summary:  "leader-latch that leads on its previous session's node after its client starts a new session",
		Source:   "Curator LeaderLatch without its reset on a new session; Curator 2's new handle after a connection timeout",
		Flaw:     "it trusts the old session's candidate node without comparing its ephemeralOwner with the current session: when the old session expires, the server deletes the node and the next candidate leads too (split-brain)",
		New:      func(c Conn, p string, _ Options) Lock { return NewOldSessionLatch(c, p) },
		Election: true,
	},
	{
		Name:    "stale-resume-lock",
		Summary: "fair-lock whose uncontended holder keeps its node on release and resumes it at its next acquire, deciding both on plain reads",
		Source:  "the Programmer's Guide on stale reads and sync (Consistency Guarantees); zklab's own teaching variant (issue 13)",
		Flaw:    "on an ensemble, a holder paused past its session timeout reads from a follower that has not applied the expiry, finds its node still there and resumes it beside the new holder",
		Servers: 3,
		New:     func(c Conn, p string, _ Options) Lock { return NewStaleResumeLock(c, p) },
	},
}

func rwSideOf(l *RWLock, o Options) Lock {
	if o.Read {
		return l.Read()
	}
	return l.Write()
}

// Names lists the recipes' names: the correct ones, then the flawed
// variants.
func Names() []string {
	names := make([]string, len(registry))
	for i, r := range registry {
		names[i] = r.Name
	}
	return names
}

// Recipes lists every recipe.
func Recipes() []Recipe { return slices.Clone(registry) }

// Lookup finds a recipe by name.
func Lookup(name string) (Recipe, bool) {
	i := slices.IndexFunc(registry, func(r Recipe) bool { return r.Name == name })
	if i < 0 {
		return Recipe{}, false
	}
	return registry[i], true
}
