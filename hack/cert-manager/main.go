// Command cert-manager runs cert-manager's controllers and its CA injector, built from its Go
// module (github.com/cert-manager/cert-manager) against a cluster's kubeconfig, for the chart's
// end-to-end test of the webhook's certificate.
//
// cert-manager's own commands (cmd/controller, cmd/cainjector) are Go modules of their own
// that the Go module proxy does not serve, so this program wires the same public packages the
// way they do: the controllers registered by cert-manager's packages (controller.Known) on one
// ContextFactory, and the injectors (cainjector.RegisterAllInjectors) on a controller-runtime
// manager. Only what a self-signed Issuer's Certificate needs is enabled, with no leader
// election, metrics or health servers: one process of each, started and stopped by the test.
//
//	cert-manager controller --kubeconfig FILE
//	cert-manager cainjector --kubeconfig FILE
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"
)

func main() {
	if len(os.Args) != 4 || os.Args[2] != "--kubeconfig" {
		fmt.Fprintln(os.Stderr, "usage: cert-manager controller|cainjector --kubeconfig FILE")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx = klog.NewContext(ctx, klog.Background())

	var err error
	switch command, kubeconfig := os.Args[1], os.Args[3]; command {
	case "controller":
		err = runControllers(ctx, kubeconfig)
	case "cainjector":
		err = runInjectors(ctx, kubeconfig)
	default:
		err = fmt.Errorf("unknown command %q: controller or cainjector", command)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "cert-manager:", err)
		os.Exit(1)
	}
}
