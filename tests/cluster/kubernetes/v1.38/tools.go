//go:build tools

// Package tools pins the Kubernetes pre-release (v1.38.0-beta.0) that `PLACER_KUBERNETES=v1.38`
// runs the control-plane tests against: kube-apiserver, kube-controller-manager and
// kube-scheduler only, in a module of their own so that JobSet and Kueue (tests/cluster/upstream)
// keep the Kubernetes libraries they were released with. tests/cluster/build.py builds them from
// the Go module proxy; the go line asks for Go 1.27, which the go command fetches from the proxy
// as a toolchain module.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
