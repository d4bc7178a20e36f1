#!/usr/bin/python3
"""kazoo's view of ZooKeeper access control, as a transcript.

Usage: acl.py HOST:PORT

Two clients (two sessions): alice authenticates with a digest and creates
a node only she may touch; bob tries every operation on it, then the
ACL calls, bad ACLs and an auth with an unknown scheme. Each step prints
one line: what was done and the outcome (the exception's class, or what
came back). The yardstick test runs it against a real ZooKeeper and
against `zklab serve` and wants the same transcript
(cmd/zklab/yardstick_test.go).
"""

import sys
import uuid

from kazoo.client import KazooClient
from kazoo.security import make_acl, make_digest_acl, OPEN_ACL_UNSAFE


def step(name, fn):
    try:
        out = fn()
    except Exception as e:  # the outcome is the exception's class
        out = type(e).__name__
    print("%s: %s" % (name, out), flush=True)


def acls(result):
    acl, stat = result
    return "%s aversion=%d" % (
        sorted("%s:%s:%d" % (a.id.scheme, a.id.id, a.perms) for a in acl), stat.aversion)


def main():
    hosts = sys.argv[1]
    root = "/kazoo-acl-" + uuid.uuid4().hex
    alice = KazooClient(hosts=hosts, auth_data=[("digest", "alice:pw")], timeout=10)
    bob = KazooClient(hosts=hosts, timeout=10)
    alice.start(timeout=10)
    bob.start(timeout=10)
    mine = [make_digest_acl("alice", "pw", all=True)]
    step("alice create root", lambda: alice.create(root, b"", acl=OPEN_ACL_UNSAFE) == root)
    step("alice create tenant", lambda: alice.create(root + "/t", b"mine", acl=mine) == root + "/t")
    step("alice get", lambda: alice.get(root + "/t")[0])
    step("alice get_acls", lambda: acls(alice.get_acls(root + "/t")))
    step("bob get", lambda: bob.get(root + "/t")[0])
    step("bob get_children", lambda: bob.get_children(root + "/t"))
    step("bob create child", lambda: bob.create(root + "/t/x", b""))
    step("bob set", lambda: bob.set(root + "/t", b"theirs").version)
    step("bob set_acls", lambda: bob.set_acls(root + "/t", OPEN_ACL_UNSAFE).aversion)
    step("bob exists", lambda: bob.exists(root + "/t").version)
    step("bob add_auth wrong password", lambda: bob.add_auth("digest", "alice:wrong"))
    step("bob get after wrong password", lambda: bob.get(root + "/t")[0])
    step("bob add_auth alice", lambda: bob.add_auth("digest", "alice:pw"))
    step("bob get as alice", lambda: bob.get(root + "/t")[0])
    step("bob set_acls stale aversion", lambda: bob.set_acls(root + "/t", OPEN_ACL_UNSAFE, version=3).aversion)
    step("bob set_acls", lambda: bob.set_acls(root + "/t", [make_acl("world", "anyone", read=True)], version=0).aversion)
    step("alice get_acls after", lambda: acls(alice.get_acls(root + "/t")))
    step("alice set read-only", lambda: alice.set(root + "/t", b"x").version)
    for name, acl in [
        ("digest without a colon", make_acl("digest", "nocolon", all=True)),
        ("ip that does not parse", make_acl("ip", "300.1.1.1", all=True)),
        ("ip with a bad mask", make_acl("ip", "127.0.0.1/33", all=True)),
        ("unknown scheme", make_acl("foo", "bar", all=True)),
        ("world other than anyone", make_acl("world", "someone", all=True)),
        ("ip loopback", make_acl("ip", "127.0.0.0/8", all=True)),
    ]:
        step("bob create with " + name, lambda: bob.create(root + "/c", b"", acl=[acl]) == root + "/c")
    step("bob delete", lambda: bob.delete(root + "/c"))
    step("bob add_auth unknown scheme", lambda: bob.add_auth("foo", "bar"))
    step("bob get after the failed auth", lambda: bob.get(root + "/t")[0])
    alice.delete(root, recursive=True)
    alice.stop()
    bob.stop()
    print("ok")


if __name__ == "__main__":
    main()
