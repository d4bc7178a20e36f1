#!/usr/bin/python3
"""kazoo's Lock or Election, contended over and over, under faults.

Usage: contenders.py HOST:PORT lock|election|none PATH CONTENDERS HOLD_MS SESSION_TIMEOUT_MS

Each contender is a thread with its own KazooClient (its own session). It
acquires the lock (or is elected), holds it for HOLD_MS, releases it, and
starts again, until told to stop (with "none" it takes no lock at all:
the test's checks must catch that); errors (a lost connection, an expired
session) are logged and the contender tries again. It prints one JSON line
per event on stdout, for cmd/zklab/realfaults_test.go to check against
the server's own view:

  {"t": epoch ms, "c": "c0", "sid": "0x...", "ev": EVENT, ...}

EVENT is "acquired" (the recipe says the contender holds the lock or
leads; "hold_ms" is how long it will), "releasing" (its critical section
is over: from here it no longer believes it holds), "released", "error"
("err"), "state" ("state": kazoo's LOST, SUSPENDED or CONNECTED),
"idle" (stopped contending, session still open) and "closed". The
program reads commands on stdin, one a line: "hold MS" (the hold of the
next acquisitions), "stop" (finish the round, release, report idle) and
"close" (close every client and exit).
"""

import json
import sys
import threading
import time

from kazoo.client import KazooClient

out_mu = threading.Lock()


def emit(c, client, ev, **kw):
    try:
        sid = "0x%x" % client.client_id[0] if client.client_id else ""
    except Exception:  # noqa: BLE001 - the id is only for the log
        sid = ""
    rec = {"t": time.time() * 1000.0, "c": c, "sid": sid, "ev": ev}
    rec.update(kw)
    with out_mu:
        sys.stdout.write(json.dumps(rec) + "\n")
        sys.stdout.flush()


class Settings:
    def __init__(self, hold_ms):
        self.mu = threading.Lock()
        self.hold_ms = hold_ms
        self.stop = threading.Event()


def contender(name, client, recipe, path, settings, idle):
    def hold():
        with settings.mu:
            ms = settings.hold_ms
        emit(name, client, "acquired", hold_ms=ms)
        time.sleep(ms / 1000.0)
        emit(name, client, "releasing")

    # One recipe object per contender, as an application keeps it.
    lock = client.Lock(path, name) if recipe == "lock" else None
    election = client.Election(path, name) if recipe == "election" else None
    while not settings.stop.is_set():
        try:
            if recipe == "lock":
                if lock.acquire(timeout=30):
                    try:
                        hold()
                    finally:
                        lock.release()
                    emit(name, client, "released")
            elif recipe == "none":
                hold()
                emit(name, client, "released")
            else:
                # run blocks until elected, calls hold, and gives up the
                # leadership when hold returns.
                election.run(hold)
                emit(name, client, "released")
        except Exception as e:  # noqa: BLE001 - a fault: log it, contend again
            emit(name, client, "error", err=repr(e))
            time.sleep(0.1)
        time.sleep(0.01)
    emit(name, client, "idle")
    idle.release()


def main():
    args = sys.argv[1:]
    if len(args) != 6 or args[1] not in ("lock", "election", "none"):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        sys.exit(2)
    hosts, recipe, path = args[0], args[1], args[2]
    n, hold_ms, timeout_ms = int(args[3]), int(args[4]), int(args[5])
    settings = Settings(hold_ms)
    clients = []
    for i in range(n):
        name = "c%d" % i
        c = KazooClient(hosts=hosts, timeout=timeout_ms / 1000.0)
        c.add_listener(lambda state, name=name, c=c: emit(name, c, "state", state=str(state)))
        c.start(timeout=30)
        clients.append((name, c))
    idle = threading.Semaphore(0)
    threads = [threading.Thread(target=contender, args=(name, c, recipe, path, settings, idle), daemon=True)
               for name, c in clients]
    for t in threads:
        t.start()
    for line in sys.stdin:
        words = line.split()
        if words[:1] == ["hold"]:
            with settings.mu:
                settings.hold_ms = int(words[1])
        elif words == ["stop"]:
            settings.stop.set()
            for _ in threads:
                idle.acquire()
            emit("all", clients[0][1], "idle")
        elif words == ["close"]:
            break
    settings.stop.set()
    for name, c in clients:
        c.stop()
        c.close()
    emit("all", clients[0][1], "closed")


if __name__ == "__main__":
    main()
