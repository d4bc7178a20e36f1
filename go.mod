module github.com/zklab/zklab

go 1.26

require github.com/go-zookeeper/zk v1.0.4

require pgregory.net/rapid v1.3.0

require github.com/anishathalye/porcupine v1.3.1
