# zklab's tasks. `make test` is what CI runs (.ci/run).
GO ?= go

.PHONY: test deps vet race bench tour fuzz pgo

# test installs what the tests need, then runs vet and every test, with
# the race detector (fuzz targets run their seed corpus there), then
# fuzzes each target briefly. A longer search: make fuzz FUZZTIME=10m.
# cmd/zklab runs go-zookeeper's integration suite against a real
# ZooKeeper and against zklab serve, so a package may take longer than
# go test's default 10-minute limit on a loaded machine.
#
# cmd/zklab runs first, on its own: its real ZooKeepers, ensembles and
# JVM clients (Curator, kazoo) would otherwise share the 2 cores with the
# real-server tests of recipes and sim/difftest, whose sessions then time
# out. The other packages run together after it.
#
# cmd/zklab's TestYardstickGoZookeeperSuiteCrossChecked runs eight of
# go-zookeeper's tests (watches, multi, ACL/auth, a restart) against
# zklab serve --oracle, a real ZooKeeper beside each server: about a
# minute. The whole suite cross-checked, about 2m40s more on an idle
# machine, would take make test past its ~17 minutes: it runs with
# ZKLAB_XCHK_GOZK=1 go test -count=1 -timeout 40m -run CrossChecked ./cmd/zklab
#
# The other packages start longest first: go test runs two at a time, in
# the order it is given them, and in list order the three long ones
# (recipes 5 min, sim/difftest 4, scenarios 3.5 with the race detector)
# fell to one slot one after another while the other finished early.
LONG_PACKAGES = ./recipes ./sim/difftest ./scenarios
#
# The tests build without cmd/zklab's profile (-pgo=off): with it, go
# test compiles every package a second time for cmd/zklab's test binary
# alone, and the optimization changes no result.
test: deps vet
	$(GO) test -pgo=off -race -count=1 -timeout 45m ./cmd/zklab
	$(GO) test -pgo=off -race -count=1 -timeout 45m $(LONG_PACKAGES) $$($(GO) list ./... | grep -v -e '/cmd/zklab$$' -e '/recipes$$' -e '/sim/difftest$$' -e '/scenarios$$')
	$(MAKE) fuzz

# fuzz searches each fuzz target briefly, or for FUZZTIME when it is set
# (make fuzz FUZZTIME=10m); a failure is written under the package's
# testdata/fuzz and replays with go test.
#
# The brief search is a count of inputs, about ten seconds' worth each
# on this 2-core machine, not a duration: with -fuzztime given as a
# duration, Go 1.26's fuzzing coordinator can fail a target with a bare
# "context deadline exceeded" as the time runs out, no input at fault
# (go.dev/issue/75804, fixed in Go 1.27). It did so to FuzzDecodeRequest
# in a make test of stop 24. A count has no deadline to race.
FUZZTIME ?=
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(or $(FUZZTIME),30000x) ./scenarios
	$(GO) test -run '^$$' -fuzz '^FuzzRun$$' -fuzztime $(or $(FUZZTIME),100x) ./scenarios
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeRequest$$' -fuzztime $(or $(FUZZTIME),100000x) ./sim/wire
	$(GO) test -run '^$$' -fuzz '^FuzzServeStream$$' -fuzztime $(or $(FUZZTIME),80000x) ./sim/wire

# deps installs what the tests need when it is missing: Debian's
# zookeeper (the real-server tests), chromium (the HTML report tests), and
# kazoo, Curator and a JDK (the yardsticks of zklab serve, cmd/zklab).
deps:
	@missing=""; \
	[ -x /usr/share/zookeeper/bin/zkServer.sh ] || missing="$$missing zookeeper"; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	[ -f /usr/lib/python3/dist-packages/kazoo/recipe/lock.py ] || missing="$$missing python3-kazoo"; \
	[ -f /usr/share/java/curator-recipes.jar ] || missing="$$missing libcurator-recipes-java"; \
	[ -x /usr/bin/javac ] || missing="$$missing default-jdk-headless"; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./sim/

# pgo refreshes cmd/zklab/default.pgo, the CPU profile go build and go
# install optimize zklab with (profile-guided optimization, go.dev/doc/pgo):
# explorations on one server and on three, and the simulator's raw
# operations. It cut 4% of an exploration's instructions and 7% of a
# simulated operation's (BenchmarkExplore5x10, BenchmarkSimThroughput,
# under callgrind). A profile gone stale after a change only optimizes
# less; refresh it after large ones.
PGO_TMP ?= /tmp/zklab-pgo
pgo:
	rm -rf $(PGO_TMP) && mkdir -p $(PGO_TMP)
	$(GO) test -pgo=off -o $(PGO_TMP)/scenarios.test -run '^$$' -bench 'BenchmarkExplore5x10$$' -benchtime 50x -cpu 1 -cpuprofile $(PGO_TMP)/explore.pprof ./scenarios
	$(GO) test -pgo=off -o $(PGO_TMP)/scenarios.test -run '^$$' -bench 'BenchmarkExplore5x10Servers$$/servers=3' -benchtime 20x -cpu 1 -cpuprofile $(PGO_TMP)/ensemble.pprof ./scenarios
	$(GO) test -pgo=off -o $(PGO_TMP)/sim.test -run '^$$' -bench 'BenchmarkSimThroughput$$' -benchtime 3000000x -cpu 1 -cpuprofile $(PGO_TMP)/sim.pprof ./sim
	$(GO) tool pprof -proto $(PGO_TMP)/explore.pprof $(PGO_TMP)/ensemble.pprof $(PGO_TMP)/sim.pprof > cmd/zklab/default.pgo

tour:
	$(GO) run ./cmd/zklab tour
