#!/bin/sh
# zkServer.sh for running go-zookeeper's integration suite against Debian's
# ZooKeeper 3.8: Debian's own zkServer.sh, with the classes compiled from
# Version.java (in $ZKLAB_VERSION_CLASSES) ahead of zookeeper.jar, so that
# the suite's FLWSrvr readiness check can parse `srvr`. Everything else is
# the real server.
: "${ZKLAB_VERSION_CLASSES:?set ZKLAB_VERSION_CLASSES to the directory javac wrote Version.class under}"
JVMFLAGS="-cp $ZKLAB_VERSION_CLASSES:/etc/zookeeper/conf:/usr/share/java/zookeeper.jar $JVMFLAGS"
export JVMFLAGS
exec /usr/share/zookeeper/bin/zkServer.sh "$@"
