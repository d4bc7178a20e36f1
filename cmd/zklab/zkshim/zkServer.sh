#!/bin/sh
# zkServer.sh that runs `zklab serve` where a test harness expects
# ZooKeeper's own script: point $ZOOKEEPER_BIN_PATH (go-zookeeper's test
# harness) or your own harness at this directory.
#
#   zkServer.sh start-foreground ZOO.CFG
#
# runs `zklab serve --zoo-cfg ZOO.CFG` in this process (exec), so that a
# harness that kills the script kills the server. $ZKLAB names the zklab
# binary (default: zklab on PATH). Of the JVM flags a harness passes in
# SERVER_JVMFLAGS or JVMFLAGS, -Dzookeeper.extendedTypesEnabled=true
# becomes --extended-types and
# -Dzookeeper.DigestAuthenticationProvider.superDigest=D becomes
# --super-digest D; the rest (emulate353TTLNodes, log settings, the
# JVM's own) have no zklab counterpart and are ignored. Only
# start-foreground is supported: zklab serve keeps no pid file, so start,
# stop, status and restart would mean nothing. With the zoo.cfg's dataDir,
# zklab serve keeps its journal there, and a server started again on it
# (after a kill -9 too) has its nodes and sessions back, as ZooKeeper.
# A zoo.cfg with server.N lines (and DATADIR/myid) makes the process one
# member of a simulated ensemble, shared by the members whose dataDirs
# have the same parent (see zklab serve --help); killing the script's
# process crash-stops that member, starting it again rejoins it.
set -eu
if [ "$#" -lt 1 ] || [ "$1" != start-foreground ]; then
	echo "zkServer.sh (zklab shim): only 'start-foreground ZOO.CFG' is supported, got: $*" >&2
	exit 2
fi
shift
if [ "$#" -ne 1 ]; then
	echo "zkServer.sh (zklab shim): start-foreground takes one zoo.cfg, got: $*" >&2
	exit 2
fi
cfg=$1
extended=
super=
for flag in ${SERVER_JVMFLAGS:-} ${JVMFLAGS:-}; do
	case "$flag" in
	-Dzookeeper.extendedTypesEnabled=true) extended=--extended-types ;;
	-Dzookeeper.DigestAuthenticationProvider.superDigest=*) super=${flag#*=} ;;
	esac
done
if [ -n "$super" ]; then
	exec "${ZKLAB:-zklab}" serve --zoo-cfg "$cfg" --super-digest "$super" $extended
fi
exec "${ZKLAB:-zklab}" serve --zoo-cfg "$cfg" $extended
