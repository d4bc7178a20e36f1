// Recipes runs Curator's lock, leader election and semaphore recipes
// against one server and asserts their outcomes.
//
// Usage: java -cp CLASSES:CURATOR_JARS Recipes HOST:PORT [--broken]
//
// Each recipe runs with several contenders, each on its own
// CuratorFramework (its own session): InterProcessMutex holds at most one
// holder at a time and every contender held it; LeaderSelector has
// exactly one leader at a time and every contender led; with
// InterProcessSemaphoreV2 of 2 leases never more than 2 holders, every
// contender held one and the bound was reached. It prints one line per
// recipe and "ok" at the end; an assertion failure exits 1. With --broken
// the mutex contenders skip the lock, to show that the checks catch two
// holders at once (the run must then fail). This program is a yardstick:
// the same run must pass against a real ZooKeeper and against `zklab
// serve` (cmd/zklab/yardstick_test.go).

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class Recipes {
    static final int CONTENDERS = 4;
    static final int ROUNDS = 3;
    static final long HOLD_MS = 20;

    /** Counts holders inside a critical section and remembers the most. */
    static final class Tally {
        final int bound;
        int now, most;
        final Map<String, Integer> entries = new TreeMap<>();
        final List<String> violations = new ArrayList<>();

        Tally(int bound) { this.bound = bound; }

        synchronized void enter(String who) {
            now++;
            most = Math.max(most, now);
            entries.merge(who, 1, Integer::sum);
            if (now > bound) {
                violations.add(who + " entered with " + now + " holders (bound " + bound + ")");
            }
        }

        synchronized void leave() { now--; }
    }

    interface Body { void run(int i, CuratorFramework c) throws Exception; }

    static List<String> runAll(List<CuratorFramework> cs, Body body) throws InterruptedException {
        List<String> errors = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < cs.size(); i++) {
            final int n = i;
            Thread t = new Thread(() -> {
                try {
                    body.run(n, cs.get(n));
                } catch (Exception e) {
                    synchronized (errors) { errors.add("c" + n + ": " + e); }
                }
            });
            threads.add(t);
            t.start();
        }
        for (Thread t : threads) {
            t.join(120_000);
            if (t.isAlive()) {
                synchronized (errors) { errors.add("a contender did not finish within 120 s"); }
            }
        }
        return errors;
    }

    static boolean check(String name, Tally tally, List<String> errors, int wantEach, int wantMost) {
        List<String> problems = new ArrayList<>(errors);
        problems.addAll(tally.violations);
        for (int i = 0; i < CONTENDERS; i++) {
            int got = tally.entries.getOrDefault("c" + i, 0);
            if (got != wantEach) {
                problems.add("c" + i + " entered " + got + " times, want " + wantEach);
            }
        }
        if (tally.most != wantMost) {
            problems.add("at most " + tally.most + " holders at once, want " + wantMost);
        }
        if (!problems.isEmpty()) {
            System.out.println(name + ": FAIL: " + String.join("; ", problems));
            return false;
        }
        System.out.println(name + ": ok (" + CONTENDERS + " contenders, at most " + tally.most + " at once)");
        return true;
    }

    static boolean mutex(List<CuratorFramework> cs, String root, boolean broken) throws Exception {
        Tally tally = new Tally(1);
        CyclicBarrier start = new CyclicBarrier(cs.size());
        List<String> errors = runAll(cs, (i, c) -> {
            InterProcessMutex lock = new InterProcessMutex(c, root + "/mutex");
            start.await(30, TimeUnit.SECONDS);
            for (int r = 0; r < ROUNDS; r++) {
                if (!broken && !lock.acquire(60, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("mutex not acquired in 60 s");
                }
                try {
                    tally.enter("c" + i);
                    Thread.sleep(HOLD_MS);
                    tally.leave();
                } finally {
                    if (!broken) {
                        lock.release();
                    }
                }
            }
        });
        return check("Curator InterProcessMutex", tally, errors, ROUNDS, 1);
    }

    static boolean leaderSelector(List<CuratorFramework> cs, String root) throws Exception {
        Tally tally = new Tally(1);
        List<String> errors = runAll(cs, (i, c) -> {
            CountDownLatch led = new CountDownLatch(1);
            LeaderSelector selector = new LeaderSelector(c, root + "/leader", new LeaderSelectorListenerAdapter() {
                @Override
                public void takeLeadership(CuratorFramework client) throws Exception {
                    // Leadership lasts until this method returns.
                    tally.enter("c" + i);
                    Thread.sleep(HOLD_MS);
                    tally.leave();
                    led.countDown();
                }
            });
            selector.start();
            try {
                if (!led.await(60, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("never led in 60 s");
                }
            } finally {
                selector.close();
            }
        });
        return check("Curator LeaderSelector", tally, errors, 1, 1);
    }

    static boolean semaphore(List<CuratorFramework> cs, String root, int leases) throws Exception {
        Tally tally = new Tally(leases);
        CyclicBarrier start = new CyclicBarrier(cs.size());
        List<String> errors = runAll(cs, (i, c) -> {
            InterProcessSemaphoreV2 sem = new InterProcessSemaphoreV2(c, root + "/semaphore", leases);
            start.await(30, TimeUnit.SECONDS);
            for (int r = 0; r < ROUNDS; r++) {
                Lease lease = sem.acquire(60, TimeUnit.SECONDS);
                if (lease == null) {
                    throw new IllegalStateException("no lease in 60 s");
                }
                try {
                    tally.enter("c" + i);
                    Thread.sleep(5 * HOLD_MS);
                    tally.leave();
                } finally {
                    sem.returnLease(lease);
                }
            }
        });
        return check("Curator InterProcessSemaphoreV2(" + leases + ")", tally, errors, ROUNDS, leases);
    }

    public static void main(String[] args) throws Exception {
        boolean broken = false;
        String hosts = null;
        for (String a : args) {
            if (a.equals("--broken")) {
                broken = true;
            } else if (hosts == null) {
                hosts = a;
            } else {
                hosts = null;
                break;
            }
        }
        if (hosts == null) {
            System.err.println("usage: Recipes HOST:PORT [--broken]");
            System.exit(2);
        }
        String root = "/curator-yardstick-" + UUID.randomUUID().toString().substring(0, 8);
        List<CuratorFramework> cs = new ArrayList<>();
        boolean ok;
        try {
            for (int i = 0; i < CONTENDERS; i++) {
                CuratorFramework c = CuratorFrameworkFactory.newClient(hosts, 10_000, 15_000,
                        new ExponentialBackoffRetry(100, 3));
                c.start();
                if (!c.blockUntilConnected(15, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("client " + i + " did not connect in 15 s");
                }
                cs.add(c);
            }
            ok = mutex(cs, root, broken);
            if (!broken) {
                ok = leaderSelector(cs, root) && ok;
                ok = semaphore(cs, root, 2) && ok;
            }
            if (cs.get(0).checkExists().forPath(root) != null) {
                cs.get(0).delete().deletingChildrenIfNeeded().forPath(root);
            }
        } finally {
            for (CuratorFramework c : cs) {
                c.close();
            }
        }
        if (!ok) {
            System.exit(1);
        }
        System.out.println("ok");
    }
}
