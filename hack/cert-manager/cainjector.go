package main

import (
	"context"

	cmscheme "github.com/cert-manager/cert-manager/pkg/client/clientset/versioned/scheme"
	"github.com/cert-manager/cert-manager/pkg/controller/cainjector"
	"github.com/cert-manager/cert-manager/pkg/util"
	corev1 "k8s.io/api/core/v1"
	apiext "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	kscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	apireg "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// runInjectors fills the CA bundle of webhook configurations, API services and CRDs annotated
// with cert-manager.io/inject-ca-from (a Certificate's Secret's ca.crt), as cainjector does
// with its defaults: every kind, every namespace, Secrets read uncached.
func runInjectors(ctx context.Context, kubeconfig string) error {
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	// The injectors' field manager is the user agent's prefix, as cainjector's.
	config = util.RestConfigWithUserAgent(config, "cainjector")
	scheme := runtime.NewScheme()
	utilruntime.Must(kscheme.AddToScheme(scheme))
	utilruntime.Must(cmscheme.AddToScheme(scheme))
	utilruntime.Must(apiext.AddToScheme(scheme))
	utilruntime.Must(apireg.AddToScheme(scheme))
	ctrl.SetLogger(klog.FromContext(ctx))
	manager, err := ctrl.NewManager(config, ctrl.Options{
		Scheme:  scheme,
		Cache:   cache.Options{ReaderFailOnMissingInformer: true},
		Client:  client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		return err
	}
	err = cainjector.RegisterAllInjectors(ctx, manager, cainjector.SetupOptions{
		EnableCertificatesDataSource: true,
		EnabledReconcilersFor: map[string]bool{
			"mutatingwebhookconfiguration":   true,
			"validatingwebhookconfiguration": true,
			"apiservice":                     true,
			"customresourcedefinition":       true,
		},
	})
	if err != nil {
		return err
	}
	return manager.Start(ctx)
}
