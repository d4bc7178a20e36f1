#!/bin/bash
# zkServer.sh for go-zookeeper's harness that runs `zklab serve --oracle`
# cross-checked against a Debian ZooKeeper of its own: for each server the
# harness starts, a real ZooKeeper on a free port (through
# ../realzk/zkServer.sh, $ZKLAB_VERSION_CLASSES), then zklab serve in this
# process (exec), its stderr (the differences) appended to $ZKLAB_XCHK_LOG.
#
# A restart keeps the oracle's state: the real server's dataDir is kept
# under $ZKLAB_XCHK_DIR, named after the zoo.cfg's dataDir, and a server
# started again on that dataDir (go-zookeeper's
# TestIntegration_IfAuthdataSurvivesReconnect kills it and starts it
# again) starts its oracle again on the oracle's own dataDir, as zklab
# serve recovers from its journal: both have the nodes and the sessions
# back, and zklab serve keeps its pairing of sessions with the oracle's in
# its dataDir (zklab-oracle-sessions). When zklab's dataDir holds no
# journal, zklab starts empty, and so does the oracle. $ZKLAB_XCHK_DIR is
# the caller's to remove, once every server is stopped: it is outside the
# harness's dataDir so that a real server still stopping does not write
# into a directory the harness is removing.
#
# A watchdog stops the real server when zklab serve is gone (the harness
# kills it with SIGKILL, which no trap sees), and stops zklab serve too
# when the harness is gone (a test binary that timed out), so that no JVM
# outlives its harness. A real server started on a dataDir waits (flock)
# until the one before on it has exited.
set -eu
if [ "$#" -ne 2 ] || [ "$1" != start-foreground ]; then
	echo "zkServer.sh (zklab cross-check shim): only 'start-foreground ZOO.CFG', got: $*" >&2
	exit 2
fi
: "${ZKLAB_XCHK_DIR:?set ZKLAB_XCHK_DIR to a directory for the real servers state (the caller removes it)}"
cfg=$2
here=$(cd "$(dirname "$0")" && pwd)
datadir=$(sed -n 's/^[[:space:]]*dataDir[[:space:]]*=[[:space:]]*//p' "$cfg" | tail -n 1)
if [ -n "$datadir" ]; then
	datadir=$(realpath -m "$datadir")
	odir=$ZKLAB_XCHK_DIR/oracle-$(printf '%s' "$datadir" | sha1sum | cut -c1-16)
	mkdir -p "$odir"
	printf '%s\n' "$datadir" > "$odir/for"
	keep=1
else
	odir=$(mktemp -d "$ZKLAB_XCHK_DIR/oracle-XXXXXX")
	keep=0
fi
oport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
grep -v -e '^clientPort' -e '^dataDir' -e '^clientPortAddress' "$cfg" > "$odir/zoo.cfg"
printf 'clientPort=%s\ndataDir=%s/data\n4lw.commands.whitelist=*\n' "$oport" "$odir" >> "$odir/zoo.cfg"
# zklab serve recovers from its journal when its dataDir holds one; the
# oracle starts from its dataDir then, and empty otherwise.
journal=0
for f in "$datadir"/zklab-log.* "$datadir"/zklab-snapshot.*; do
	if [ -e "$f" ]; then journal=1; fi
done
if [ "$keep" = 1 ] && [ "$journal" = 0 ]; then
	# No journal: whatever a real server had here goes, once the one
	# before has exited (the lock).
	flock -w 60 "$odir/lock" rm -rf "$odir/data"
fi
# setsid: the server and the flock that holds the lock for it are a
# process group of their own, which the watchdog stops as one.
ZOO_LOG_DIR=$odir setsid flock -w 60 "$odir/lock" "$here/../realzk/zkServer.sh" start-foreground "$odir/zoo.cfg" >> "$odir/out" 2>&1 < /dev/null &
opid=$!
shim=$$
harness=$PPID
(
	while kill -0 "$shim" 2>/dev/null && kill -0 "$harness" 2>/dev/null; do sleep 0.3; done
	if kill -0 "$shim" 2>/dev/null; then # the harness is gone: so goes zklab serve
		kill "$shim" 2>/dev/null || true
	fi
	kill -- -"$opid" 2>/dev/null || true
	for _ in $(seq 20); do kill -0 -- -"$opid" 2>/dev/null || break; sleep 0.1; done
	kill -9 -- -"$opid" 2>/dev/null || true
	for _ in $(seq 50); do kill -0 -- -"$opid" 2>/dev/null || break; sleep 0.1; done
	if [ "$keep" = 0 ]; then rm -rf "$odir"; fi
) > /dev/null 2>&1 < /dev/null &
# Ready when srvr shows its mode: it accepts connections (and answers
# ruok) before it serves them.
python3 - "$oport" <<'PY'
import socket, sys, time
for _ in range(600):
    try:
        with socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1) as s:
            s.sendall(b"srvr")
            if b"Mode:" in s.recv(4096):
                break
    except OSError:
        pass
    time.sleep(0.05)
PY
# As ../../../zkshim/zkServer.sh: the JVM flag for TTL nodes, which the
# real server is given too.
extended=
for flag in ${SERVER_JVMFLAGS:-} ${JVMFLAGS:-}; do
	case "$flag" in
	-Dzookeeper.extendedTypesEnabled=true) extended=--extended-types ;;
	esac
done
# Each server's start is marked in the log: its tallies count from zero.
log=${ZKLAB_XCHK_LOG:-/dev/stderr}
echo "xchk: zklab serve --zoo-cfg $cfg --oracle 127.0.0.1:$oport" >> "$log"
exec "${ZKLAB:-zklab}" serve --zoo-cfg "$cfg" $extended --oracle "127.0.0.1:$oport" 2>> "$log"
