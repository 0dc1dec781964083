//go:build tools

// Package tools pins the Kubernetes release that `PLACER_KUBERNETES=v1.37` runs the control-plane
// tests against: kube-apiserver, kube-controller-manager and kube-scheduler only, in a module of
// their own so that JobSet and Kueue (tests/cluster/upstream) keep the Kubernetes libraries they
// were released with. tests/cluster/build.py builds them from the Go module proxy.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
