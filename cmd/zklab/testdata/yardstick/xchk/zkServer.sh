#!/bin/bash
# zkServer.sh for go-zookeeper's harness that runs `zklab serve --oracle`
# cross-checked against a fresh Debian ZooKeeper of its own: for each
# server the harness starts, a real ZooKeeper on a free port (through
# ../realzk/zkServer.sh, $ZKLAB_VERSION_CLASSES), then zklab serve in this
# process (exec), its stderr (the differences) appended to $ZKLAB_XCHK_LOG.
# A watchdog stops the real server when zklab serve is gone: the harness
# kills it with SIGKILL, which no trap sees.
set -eu
if [ "$#" -ne 2 ] || [ "$1" != start-foreground ]; then
	echo "zkServer.sh (zklab cross-check shim): only 'start-foreground ZOO.CFG', got: $*" >&2
	exit 2
fi
cfg=$2
here=$(cd "$(dirname "$0")" && pwd)
odir=$(mktemp -d)
oport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
grep -v -e '^clientPort' -e '^dataDir' -e '^clientPortAddress' "$cfg" > "$odir/zoo.cfg"
printf 'clientPort=%s\ndataDir=%s/data\n4lw.commands.whitelist=*\n' "$oport" "$odir" >> "$odir/zoo.cfg"
ZOO_LOG_DIR=$odir setsid "$here/../realzk/zkServer.sh" start-foreground "$odir/zoo.cfg" > "$odir/out" 2>&1 &
opid=$!
shim=$$
(
	while kill -0 "$shim" 2>/dev/null; do sleep 0.3; done
	kill -- -"$opid" 2>/dev/null || true
	sleep 1
	kill -9 -- -"$opid" 2>/dev/null || true
	rm -rf "$odir"
) > /dev/null 2>&1 &
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
exec "${ZKLAB:-zklab}" serve --zoo-cfg "$cfg" $extended --oracle "127.0.0.1:$oport" 2>> "${ZKLAB_XCHK_LOG:-/dev/stderr}"
