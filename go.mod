module github.com/zklab/zklab

go 1.26

require github.com/go-zookeeper/zk v1.0.4
