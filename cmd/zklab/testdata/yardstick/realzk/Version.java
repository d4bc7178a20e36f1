// Version replaces Debian's org.apache.zookeeper.Version when the
// go-zookeeper suite runs against Debian's ZooKeeper 3.8 (see zkServer.sh
// here). Debian builds the jar with REVISION_HASH left as the literal
// "${mvngit.commit.id}", and ZooKeeper 3.6+ prints the build date as
// "2024-12-29 17:54 UTC"; go-zookeeper v1.0.4's FLWSrvr, which its test
// harness polls until a server is up, accepts neither (its regexp wants a
// version of [A-Za-z0-9.-] and a date of MM/dd/yyyy HH:mm zone). This
// class changes only those two strings; the server is otherwise Debian's.
package org.apache.zookeeper;

import org.apache.zookeeper.version.Info;

public class Version implements Info {
    public static int getRevision() { return REVISION; }

    public static String getRevisionHash() { return "debian"; }

    public static String getBuildDate() { return "12/29/2024 17:54 UTC"; }

    public static String getVersion() {
        return MAJOR + "." + MINOR + "." + MICRO + (QUALIFIER == null ? "" : "-" + QUALIFIER);
    }

    public static String getVersionRevision() { return getVersion() + "-" + getRevisionHash(); }

    public static String getFullVersion() { return getVersionRevision() + ", built on " + getBuildDate(); }

    public static void printUsage() { System.out.print("Usage:\tjava -cp ... org.apache.zookeeper.Version\n"); }

    public static void main(String[] args) { System.out.println(getFullVersion()); }
}
