package main

import (
	"context"
	"fmt"
	"time"

	"github.com/cert-manager/cert-manager/pkg/controller"
	"github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	crselfsigned "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	"github.com/cert-manager/cert-manager/pkg/controller/issuers"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned" // The SelfSigned issuer type.
	"golang.org/x/sync/errgroup"
)

// enabled are the controllers a Certificate of a self-signed Issuer goes through: the Issuer's
// readiness; the Certificate's trigger, private key, request, issuance into its Secret,
// readiness and old requests; the request's approval and its signing.
var enabled = []string{
	issuers.ControllerName,
	trigger.ControllerName,
	keymanager.ControllerName,
	requestmanager.ControllerName,
	issuing.ControllerName,
	readiness.ControllerName,
	revisionmanager.ControllerName,
	approver.ControllerName,
	crselfsigned.CRControllerName,
}

// The workers per controller and the backoff after a failed request: cert-manager's defaults.
const (
	workers        = 5
	minimumBackoff = time.Hour
	maximumBackoff = 32 * time.Hour
)

func runControllers(ctx context.Context, kubeconfig string) error {
	factory, err := controller.NewContextFactory(ctx, controller.ContextOptions{
		Kubeconfig:         kubeconfig,
		KubernetesAPIQPS:   20,
		KubernetesAPIBurst: 50,
		CertificateOptions: controller.CertificateOptions{
			CertificateRequestMinimumBackoffDuration: minimumBackoff,
			CertificateRequestMaximumBackoffDuration: maximumBackoff,
		},
	})
	if err != nil {
		return err
	}
	shared, err := factory.Build()
	if err != nil {
		return err
	}
	g, ctx := errgroup.WithContext(ctx)
	for _, name := range enabled {
		construct, ok := controller.Known()[name]
		if !ok {
			return fmt.Errorf("controller %s is not registered", name)
		}
		loop, err := construct(factory)
		if err != nil {
			return fmt.Errorf("controller %s: %w", name, err)
		}
		g.Go(func() error { return loop.Run(workers, ctx) })
	}
	shared.SharedInformerFactory.Start(ctx.Done())
	shared.KubeSharedInformerFactory.Start(ctx.Done())
	shared.HTTP01ResourceMetadataInformersFactory.Start(ctx.Done())
	err = g.Wait()
	shared.HTTP01ResourceMetadataInformersFactory.Shutdown()
	shared.KubeSharedInformerFactory.Shutdown()
	shared.SharedInformerFactory.Shutdown()
	return err
}
