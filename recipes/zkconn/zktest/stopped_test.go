package zktest

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStatStateGroup reads the state and process group past a command
// name that holds spaces and parentheses.
func TestStatStateGroup(t *testing.T) {
	for _, tc := range []struct {
		stat  string
		state byte
		pgrp  int
		ok    bool
	}{
		{"4242 (java) S 1 4240 4240 0 -1 4194560", 'S', 4240, true},
		{"77 (a (b) c) T 5 77 77 0", 'T', 77, true},
		{"77 (x) R", 0, 0, false},
		{"77 java S 1 2 3", 0, 0, false},
		{"77 (x) S 1 notanumber 3", 0, 0, false},
	} {
		state, pgrp, ok := statStateGroup([]byte(tc.stat))
		if state != tc.state || pgrp != tc.pgrp || ok != tc.ok {
			t.Errorf("statStateGroup(%q) = %c, %d, %v; want %c, %d, %v", tc.stat, state, pgrp, ok, tc.state, tc.pgrp, tc.ok)
		}
	}
}

// TestWaitGroupStopped: a process group of a shell and its child is
// reported running until SIGSTOP has stopped every thread of both.
func TestWaitGroupStopped(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 60 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	defer func() {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		_ = cmd.Wait()
	}()
	running, err := groupRunningThreads(pgid)
	if err != nil {
		t.Fatal(err)
	}
	if running == "" {
		t.Fatalf("process group %d: no thread reported running before SIGSTOP", pgid)
	}
	if err := waitGroupStopped(pgid, 50*time.Millisecond); err == nil || !strings.Contains(err.Error(), "still runs") {
		t.Fatalf("waiting on a group never stopped: %v, want a timeout naming a running thread", err)
	}
	if err := syscall.Kill(-pgid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if err := waitGroupStopped(pgid, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if running, err := groupRunningThreads(pgid); err != nil || running != "" {
		t.Fatalf("after waitGroupStopped: running %q, %v", running, err)
	}
	_ = syscall.Kill(-pgid, syscall.SIGCONT)
}
