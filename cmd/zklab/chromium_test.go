package main

import (
	"context"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// renderDOM opens a page in headless Chromium, lets its scripts run, and
// returns the DOM. Without Chromium the test is skipped with a hint, and
// under CI=true it fails: `make test` installs Debian's chromium.
func renderDOM(t *testing.T, page string) string {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium is not installed; `make test` installs Debian's chromium")
		}
		t.Skip("chromium is not installed: run `make test`, or `apt-get install chromium`")
	}
	abs, err := filepath.Abs(page)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// The flags keep Chromium from reaching for the network, which this
	// machine does not have, and from sharing a profile between tests.
	cmd := exec.CommandContext(ctx, bin,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+t.TempDir(), "--virtual-time-budget=5000", "--dump-dom", "file://"+abs)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("chromium: %v\n%s", err, stderr)
	}
	return string(out)
}

// screenshot opens a page in headless Chromium at width × height and
// checks the picture it took: a PNG that is not blank. With
// ZKLAB_SCREENSHOTS=DIR the picture is kept there as NAME.png, to be
// looked at.
func screenshot(t *testing.T, page, name string, width, height int) string {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed")
	}
	abs, err := filepath.Abs(page)
	if err != nil {
		t.Fatal(err)
	}
	dir := os.Getenv("ZKLAB_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	out := filepath.Join(dir, name+".png")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
		"--user-data-dir="+t.TempDir(), "--virtual-time-budget=5000",
		fmt.Sprintf("--window-size=%d,%d", width, height), "--screenshot="+out, "file://"+abs)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, b)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	if b := img.Bounds(); b.Dx() != width || b.Dy() != height {
		t.Errorf("%s is %v, want %d×%d", out, b, width, height)
	}
	// A page drawn is mostly white with ink on it: count the inked pixels.
	inked, total := 0, 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r < 0xe000 || g < 0xe000 || bl < 0xe000 {
				inked++
			}
			total++
		}
	}
	if inked*100 < total {
		t.Errorf("%s is blank: %d of %d sampled pixels inked", out, inked, total)
	}
	return out
}
