package zktest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// pauseWaitMax bounds how long Pause waits for every thread of a member's
// processes to be stopped; a loaded machine stops them in milliseconds.
const pauseWaitMax = 10 * time.Second

// pausePollInterval is how often Pause reads /proc while it waits: finer
// than readyPollInterval, as a stop takes milliseconds and Pause is timed
// against a server's work (factPausedFollower's rounds).
const pausePollInterval = time.Millisecond

// waitGroupStopped waits until every thread of every process in process
// group pgid is stopped (state T in /proc/PID/task/TID/stat), after a
// SIGSTOP to the group.
//
// kill(2) returns once the signal is queued, not once the process has
// stopped. Linux starts a group stop when one thread of the process takes
// the signal; the other threads are told only then (kernel/signal.c,
// do_signal_stop). On a busy machine another thread of a paused follower
// can meanwhile wake on a leader's proposal and acknowledge it, which made
// a write "with both followers paused" commit (factWriteInFlight, seen
// once in make test). Waiting for state T on every thread makes Pause mean
// what its callers assume.
func waitGroupStopped(pgid int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		running, err := groupRunningThreads(pgid)
		if err != nil {
			return err
		}
		if running == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("zktest: process group %d not stopped %v after SIGSTOP: thread %s still runs", pgid, timeout, running)
		}
		time.Sleep(pausePollInterval)
	}
}

// groupRunningThreads names one thread (pid/tid, state) of process group
// pgid that is not stopped, "" when all are. A process or thread that
// exits while it is read is skipped: it runs nothing any more.
func groupRunningThreads(pgid int) (string, error) {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return "", fmt.Errorf("zktest: reading /proc: %w", err)
	}
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", p.Name(), "stat"))
		if err != nil {
			continue
		}
		_, group, ok := statStateGroup(stat)
		if !ok || group != pgid {
			continue
		}
		tasks, err := os.ReadDir(filepath.Join("/proc", p.Name(), "task"))
		if err != nil {
			continue
		}
		for _, task := range tasks {
			stat, err := os.ReadFile(filepath.Join("/proc", p.Name(), "task", task.Name(), "stat"))
			if err != nil {
				continue
			}
			state, _, ok := statStateGroup(stat)
			if !ok {
				return "", fmt.Errorf("zktest: /proc/%d/task/%s/stat: unreadable: %q", pid, task.Name(), stat)
			}
			// T: stopped by a signal; t: stopped by a tracer; Z, X: gone.
			switch state {
			case 'T', 't', 'Z', 'X':
			default:
				return fmt.Sprintf("%d/%s (state %c)", pid, task.Name(), state), nil
			}
		}
	}
	return "", nil
}

// statStateGroup reads the state (field 3) and process group (field 5)
// of a /proc stat line, "pid (comm) state ppid pgrp ...". The command
// name may hold spaces and parentheses, so the fields are counted from
// its last ')' (proc(5)).
func statStateGroup(stat []byte) (state byte, pgrp int, ok bool) {
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, 0, false
	}
	fields := bytes.Fields(stat[end+1:])
	if len(fields) < 3 || len(fields[0]) != 1 {
		return 0, 0, false
	}
	pgrp, err := strconv.Atoi(string(fields[2]))
	if err != nil {
		return 0, 0, false
	}
	return fields[0][0], pgrp, true
}
