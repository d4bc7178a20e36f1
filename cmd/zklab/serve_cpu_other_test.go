//go:build !linux

package main

import "time"

// processCPUTime: getrusage and /proc are Linux's here
// (serve_cpu_bench_test.go); elsewhere the CPU is not reported.
func processCPUTime() time.Duration { return -1 }
