// Contenders runs Curator's InterProcessMutex or LeaderLatch, contended
// over and over, under faults.
//
// Usage: java -cp CLASSES:CURATOR_JARS Contenders HOST:PORT mutex|latch PATH CONTENDERS HOLD_MS SESSION_TIMEOUT_MS
//
// Each contender is a thread with its own CuratorFramework (its own
// session). It acquires the mutex (or waits for the latch's leadership),
// holds it for HOLD_MS, releases it (closes the latch), and starts again,
// until told to stop; errors are logged and the contender tries again. It
// prints one JSON line per event on stdout, for
// cmd/zklab/realfaults_test.go to check against the server's own view:
//
//   {"t": epoch ms, "c": "c0", "sid": "0x...", "ev": EVENT, ...}
//
// EVENT is "acquired" (acquire returned true, or the latch called
// isLeader; "hold_ms" is how long it will hold), "releasing" (its
// critical section is over, or the latch called notLeader: from here it
// no longer believes it holds), "released", "error" ("err"), "state"
// ("state": Curator's SUSPENDED, LOST, RECONNECTED, ...), "idle" and
// "closed". Commands on stdin, one a line: "hold MS", "stop" (finish the
// round, release, report idle), "close" (close every client and exit).

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.RetryNTimes;

public class Contenders {
    static final AtomicLong holdMs = new AtomicLong();
    static final AtomicBoolean stop = new AtomicBoolean();

    static String sid(CuratorFramework c) {
        try {
            return "0x" + Long.toHexString(c.getZookeeperClient().getZooKeeper().getSessionId());
        } catch (Exception e) {
            return "";
        }
    }

    static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char ch : s.toCharArray()) {
            if (ch == '"' || ch == '\\') {
                b.append('\\').append(ch);
            } else if (ch < 0x20) {
                b.append(String.format("\\u%04x", (int) ch));
            } else {
                b.append(ch);
            }
        }
        return b.append('"').toString();
    }

    static synchronized void emit(String who, CuratorFramework c, String ev, String extra) {
        System.out.println("{\"t\": " + System.currentTimeMillis() + ", \"c\": " + quote(who) + ", \"sid\": "
                + quote(sid(c)) + ", \"ev\": " + quote(ev) + (extra.isEmpty() ? "" : ", " + extra) + "}");
        System.out.flush();
    }

    static void hold(String who, CuratorFramework c) throws InterruptedException {
        long ms = holdMs.get();
        emit(who, c, "acquired", "\"hold_ms\": " + ms);
        Thread.sleep(ms);
        emit(who, c, "releasing", "");
    }

    static void mutex(String who, CuratorFramework c, InterProcessMutex lock) throws Exception {
        if (!lock.acquire(30, TimeUnit.SECONDS)) {
            return;
        }
        try {
            hold(who, c);
        } finally {
            lock.release();
        }
        emit(who, c, "released", "");
    }

    static void latch(String who, CuratorFramework c, String path) throws Exception {
        LeaderLatch latch = new LeaderLatch(c, path, who);
        // The latch's own word on leadership: isLeader, and notLeader when
        // Curator takes it back (a SUSPENDED or LOST connection).
        AtomicBoolean leading = new AtomicBoolean();
        latch.addListener(new LeaderLatchListener() {
            @Override
            public void isLeader() {
                leading.set(true);
            }

            @Override
            public void notLeader() {
                if (leading.getAndSet(false)) {
                    emit(who, c, "releasing", "\"why\": \"notLeader\"");
                }
            }
        });
        latch.start();
        try {
            if (!latch.await(30, TimeUnit.SECONDS)) {
                return;
            }
            long ms = holdMs.get();
            emit(who, c, "acquired", "\"hold_ms\": " + ms);
            long until = System.currentTimeMillis() + ms;
            while (leading.get() && System.currentTimeMillis() < until) {
                Thread.sleep(Math.min(5, ms));
            }
            if (leading.getAndSet(false)) {
                emit(who, c, "releasing", "");
            }
        } finally {
            latch.close();
        }
        emit(who, c, "released", "");
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 6 || !(args[1].equals("mutex") || args[1].equals("latch"))) {
            System.err.println("usage: Contenders HOST:PORT mutex|latch PATH CONTENDERS HOLD_MS SESSION_TIMEOUT_MS");
            System.exit(2);
        }
        String hosts = args[0], recipe = args[1], path = args[2];
        int n = Integer.parseInt(args[3]);
        holdMs.set(Long.parseLong(args[4]));
        int timeoutMs = Integer.parseInt(args[5]);
        List<CuratorFramework> clients = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            String who = "c" + i;
            CuratorFramework c = CuratorFrameworkFactory.builder().connectString(hosts)
                    .sessionTimeoutMs(timeoutMs).connectionTimeoutMs(timeoutMs)
                    .retryPolicy(new RetryNTimes(1000, 100)).build();
            c.getConnectionStateListenable().addListener((client, state) ->
                    emit(who, client, "state", "\"state\": " + quote(state.toString())));
            c.start();
            if (!c.blockUntilConnected(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException(who + " not connected in 30 s");
            }
            clients.add(c);
        }
        Semaphore idle = new Semaphore(0);
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            String who = "c" + i;
            CuratorFramework c = clients.get(i);
            // One mutex per contender, as an application keeps it; a
            // latch cannot start again once closed, so one per round.
            InterProcessMutex lock = new InterProcessMutex(c, path);
            Thread t = new Thread(() -> {
                while (!stop.get()) {
                    try {
                        if (recipe.equals("mutex")) {
                            mutex(who, c, lock);
                        } else {
                            latch(who, c, path);
                        }
                    } catch (Exception e) {
                        emit(who, c, "error", "\"err\": " + quote(e.toString()));
                        try {
                            Thread.sleep(100);
                        } catch (InterruptedException ie) {
                            return;
                        }
                    }
                    try {
                        Thread.sleep(10);
                    } catch (InterruptedException ie) {
                        return;
                    }
                }
                emit(who, c, "idle", "");
                idle.release();
            });
            t.setDaemon(true);
            threads.add(t);
            t.start();
        }
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        for (String line; (line = in.readLine()) != null; ) {
            String[] words = line.trim().split("\\s+");
            if (words[0].equals("hold") && words.length == 2) {
                holdMs.set(Long.parseLong(words[1]));
            } else if (words[0].equals("stop")) {
                stop.set(true);
                idle.acquire(n);
                emit("all", clients.get(0), "idle", "");
            } else if (words[0].equals("close")) {
                break;
            }
        }
        stop.set(true);
        for (CuratorFramework c : clients) {
            c.close();
        }
        emit("all", clients.get(0), "closed", "");
        System.exit(0);
    }
}
