//go:build tools

// Package tools pins the upstream programs that placer's control-plane tests run.
// Nothing here is compiled into placer; tests/cluster/build.py builds these
// main packages from the Go module proxy into a cache outside the work tree.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "sigs.k8s.io/jobset"
	_ "sigs.k8s.io/kueue/cmd/kueue"
)
