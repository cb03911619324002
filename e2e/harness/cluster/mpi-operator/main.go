// Command mpi-operator-host runs the Kubeflow MPI Operator's real MPIJob controller
// (github.com/kubeflow/mpi-operator/pkg/controller, at the version pinned in versions.env) as a host
// process of the local test cluster.
//
// Why not upstream's cmd/mpi-operator: it always serves its leader-election health check on ":8080",
// a port it hard-codes on every interface. That breaks the harness rules (everything on 127.0.0.1)
// and makes a second test cluster on the same machine crash. This entry point wires the same
// informers into the same controller, without leader election (one replica, like the controller
// manager here with --leader-elect=false), and serves /healthz and /metrics on the address it is given.
// Upstream's own flags (and their defaults, which only AddFlags sets — a zero queue rate limit would
// stall the controller) are kept; --monitoring-port is ignored in favour of --health-addr.
package main

import (
	"context"
	"flag"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	kubeinformers "k8s.io/client-go/informers"
	kubeclientset "k8s.io/client-go/kubernetes"
	clientgokubescheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/kubeflow/mpi-operator/cmd/mpi-operator/app/options"
	mpijobclientset "github.com/kubeflow/mpi-operator/pkg/client/clientset/versioned"
	kubeflowscheme "github.com/kubeflow/mpi-operator/pkg/client/clientset/versioned/scheme"
	informers "github.com/kubeflow/mpi-operator/pkg/client/informers/externalversions"
	controllersv1 "github.com/kubeflow/mpi-operator/pkg/controller"
)

func main() {
	klog.InitFlags(nil)
	opt := options.NewServerOption()
	opt.AddFlags(flag.CommandLine)
	healthAddr := flag.String("health-addr", "127.0.0.1:0", "host:port for /healthz and /metrics")
	flag.Parse()

	cfg, err := clientcmd.BuildConfigFromFlags(opt.MasterURL, opt.Kubeconfig)
	if err != nil {
		klog.Fatalf("kubeconfig: %v", err)
	}
	cfg.QPS, cfg.Burst = float32(opt.QPS), opt.Burst

	kubeClient := kubeclientset.NewForConfigOrDie(rest.AddUserAgent(cfg, "mpi-operator"))
	mpiJobClient := mpijobclientset.NewForConfigOrDie(cfg)
	if err := kubeflowscheme.AddToScheme(clientgokubescheme.Scheme); err != nil {
		klog.Fatalf("scheme: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() { <-sig; cancel() }()

	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.Handler())
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	go func() {
		if err := http.ListenAndServe(*healthAddr, mux); err != nil {
			klog.Fatalf("health endpoint %s: %v", *healthAddr, err)
		}
	}()

	kubeInformers := kubeinformers.NewSharedInformerFactoryWithOptions(kubeClient, 0,
		kubeinformers.WithNamespace(opt.Namespace))
	kubeflowInformers := informers.NewSharedInformerFactoryWithOptions(mpiJobClient, 0,
		informers.WithNamespace(opt.Namespace))
	controller, err := controllersv1.NewMPIJobController(ctx, kubeClient, mpiJobClient, nil, nil,
		kubeInformers.Core().V1().ConfigMaps(),
		kubeInformers.Core().V1().Secrets(),
		kubeInformers.Core().V1().Services(),
		kubeInformers.Batch().V1().Jobs(),
		kubeInformers.Core().V1().Pods(),
		kubeInformers.Scheduling().V1().PriorityClasses(),
		kubeflowInformers.Kubeflow().V2beta1().MPIJobs(),
		opt)
	if err != nil {
		klog.Fatalf("controller: %v", err)
	}
	kubeInformers.Start(ctx.Done())
	kubeflowInformers.Start(ctx.Done())
	klog.Infof("MPIJob controller running; health and metrics on %s", *healthAddr)
	if err := controller.Run(opt.Threadiness, ctx.Done()); err != nil {
		klog.Fatalf("controller: %v", err)
	}
}
