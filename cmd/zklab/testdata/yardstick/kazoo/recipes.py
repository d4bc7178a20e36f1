#!/usr/bin/python3
"""kazoo's lock, leader election and semaphore recipes against one server.

Usage: recipes.py HOST:PORT [--broken]

Each recipe runs with several contenders, each on its own KazooClient (its
own session), and asserts its outcome: at most one lock holder at a time
and every contender held it; exactly one leader at a time and every
contender led; never more semaphore holders than leases, every contender
held a lease, and the lease bound was reached. It prints one line per
recipe and "ok" at the end; an assertion failure exits 1. With --broken
the lock contenders skip the lock, to show that the checks catch two
holders at once (the run must then fail). This program is
a yardstick: the same run must pass against a real ZooKeeper and against
`zklab serve` (cmd/zklab/yardstick_test.go).
"""

import sys
import threading
import time
import uuid

from kazoo.client import KazooClient

CONTENDERS = 4
ROUNDS = 3
HOLD_S = 0.02


class Tally:
    """Counts holders inside a critical section and remembers the most."""

    def __init__(self, bound):
        self.bound = bound
        self.mu = threading.Lock()
        self.now = 0
        self.most = 0
        self.entries = {}
        self.violations = []

    def enter(self, who):
        with self.mu:
            self.now += 1
            self.most = max(self.most, self.now)
            self.entries[who] = self.entries.get(who, 0) + 1
            if self.now > self.bound:
                self.violations.append("%s entered with %d holders (bound %d)" % (who, self.now, self.bound))

    def leave(self):
        with self.mu:
            self.now -= 1


def clients(hosts, n):
    out = []
    for _ in range(n):
        c = KazooClient(hosts=hosts, timeout=10.0)
        c.start(timeout=15)
        out.append(c)
    return out


def run_all(fns):
    errors = []

    def wrap(fn):
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - reported, then the run fails
            errors.append(repr(e))

    threads = [threading.Thread(target=wrap, args=(fn,)) for fn in fns]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
        if t.is_alive():
            errors.append("a contender did not finish within 120 s")
    return errors


def check(name, tally, errors, want_entries, want_most):
    problems = list(errors) + tally.violations
    for who, n in sorted(want_entries.items()):
        if tally.entries.get(who, 0) != n:
            problems.append("%s entered %d times, want %d" % (who, tally.entries.get(who, 0), n))
    if tally.most != want_most:
        problems.append("at most %d holders at once, want %d" % (tally.most, want_most))
    if problems:
        print("%s: FAIL: %s" % (name, "; ".join(problems)))
        return False
    print("%s: ok (%d contenders, at most %d at once)" % (name, len(want_entries), tally.most))
    return True


class NoLock:
    """A lock that never waits: what --broken uses instead of kazoo's."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def lock(cs, root, broken=False):
    tally = Tally(1)
    barrier = threading.Barrier(len(cs))

    def contender(i, c):
        def fn():
            barrier.wait(30)
            for _ in range(ROUNDS):
                with NoLock() if broken else c.Lock(root + "/lock", "c%d" % i):
                    tally.enter("c%d" % i)
                    time.sleep(HOLD_S)
                    tally.leave()
        return fn

    errors = run_all([contender(i, c) for i, c in enumerate(cs)])
    return check("kazoo Lock", tally, errors, {"c%d" % i: ROUNDS for i in range(len(cs))}, 1)


def election(cs, root):
    tally = Tally(1)

    def contender(i, c):
        def lead():
            tally.enter("c%d" % i)
            time.sleep(HOLD_S)
            tally.leave()

        def fn():
            # run() blocks until elected, calls lead, and gives up the
            # leadership when lead returns.
            c.Election(root + "/election", "c%d" % i).run(lead)
        return fn

    errors = run_all([contender(i, c) for i, c in enumerate(cs)])
    return check("kazoo Election", tally, errors, {"c%d" % i: 1 for i in range(len(cs))}, 1)


def semaphore(cs, root, leases):
    tally = Tally(leases)
    barrier = threading.Barrier(len(cs))

    def contender(i, c):
        def fn():
            barrier.wait(30)
            for _ in range(ROUNDS):
                with c.Semaphore(root + "/semaphore", "c%d" % i, max_leases=leases):
                    tally.enter("c%d" % i)
                    time.sleep(5 * HOLD_S)
                    tally.leave()
        return fn

    errors = run_all([contender(i, c) for i, c in enumerate(cs)])
    return check("kazoo Semaphore(%d)" % leases, tally, errors, {"c%d" % i: ROUNDS for i in range(len(cs))}, leases)


def main():
    args = sys.argv[1:]
    broken = "--broken" in args
    args = [a for a in args if a != "--broken"]
    if len(args) != 1:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        sys.exit(2)
    hosts = args[0]
    root = "/kazoo-yardstick-" + uuid.uuid4().hex[:8]
    cs = clients(hosts, CONTENDERS)
    try:
        ok = lock(cs, root, broken)
        if not broken:
            ok = election(cs, root) and ok
            ok = semaphore(cs, root, 2) and ok
        cs[0].delete(root, recursive=True)
    finally:
        for c in cs:
            c.stop()
            c.close()
    if not ok:
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
