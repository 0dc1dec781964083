// Command etcd starts etcd's server from its published module, for the tests'
// control plane (the etcd release module's own main is not needed for that).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
