# zklab's tasks. `make test` is what CI runs (.ci/run).
GO ?= go

.PHONY: test deps vet race bench tour

# test installs what the tests need, then runs vet and every test, with
# the race detector.
test: deps vet
	$(GO) test -race -count=1 ./...

# deps installs Debian's zookeeper (for the real-server tests) when missing.
deps:
	@if [ ! -x /usr/share/zookeeper/bin/zkServer.sh ]; then \
		echo "installing Debian's zookeeper"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq zookeeper >/dev/null; \
	fi

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./sim/

tour:
	$(GO) run ./cmd/zklab tour
