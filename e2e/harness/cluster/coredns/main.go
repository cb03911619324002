// Command coredns-host is CoreDNS (github.com/coredns/coredns, at the version pinned in versions.env)
// with only the plugins two Corefiles use: the real node's (node.sh, node_corefile: bind, errors,
// health, kubernetes, cache — the cluster DNS of the local test cluster, a host process) and the one
// kubeadm writes for a kind cluster's CoreDNS Deployment (also ready, prometheus, forward, loop, reload
// and loadbalance; the kind node image carries this binary as registry.k8s.io/coredns/coredns).
//
// Why not upstream's main: it links every plugin of plugin.cfg, the AWS, Azure and Google Cloud SDKs
// among them, so a cold build compiled a few CPU-minutes of code the test cluster never runs. CoreDNS
// chooses its plugins at build time by the packages its main imports (upstream generates that list
// from plugin.cfg into core/plugin); this entry point imports the five itself and runs the same
// coremain. The directive order stays upstream's (core/dnsserver's Directives), so the Corefile means
// what it means to any CoreDNS, and a directive of a plugin left out fails the start with its name.
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

func main() {
	coremain.Run()
}
