//go:build unix

package main

import (
	"io"
	"net"
	"testing"
	"time"
)

// TestPeerClosedSeesTheEndWhileAnotherGoroutineReads: the host reaps a
// member whose process ended while its registration's reader is still
// blocked; peerClosed must tell a live peer from an ended one then.
func TestPeerClosedSeesTheEndWhileAnotherGoroutineReads(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	far, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	near, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer near.Close()
	read := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, near); read <- err }()
	if peerClosed(near) {
		t.Fatal("peerClosed: true for a live peer")
	}
	far.Close()
	deadline := time.Now().Add(10 * time.Second)
	for !peerClosed(near) {
		if time.Now().After(deadline) {
			t.Fatal("peerClosed: still false 10 s after the peer closed")
		}
		time.Sleep(time.Millisecond)
	}
	if err := <-read; err != nil {
		t.Fatalf("the reader: %v, want end of file", err)
	}
}
