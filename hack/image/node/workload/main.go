// The workload image of the local cluster's examples and tests.
//
//	workload [NAME ...]   prints NAME=value for each named environment variable (every
//	                      PUNCTUAL_* variable when none is named); with CALL_URL set it first
//	                      sends one GET there, the moment it starts, and prints the answer.
//	workload serve ADDR   answers every HTTP request on ADDR with "hello from <hostname>".
//
// An https CALL_URL is verified against the pod's service-account CA and carries its token when
// the pod has them: the in-cluster way of calling the API server through the kubernetes Service.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"
)

const serviceAccount = "/var/run/secrets/kubernetes.io/serviceaccount/"

func main() {
	if len(os.Args) == 3 && os.Args[1] == "serve" {
		serve(os.Args[2])
		return
	}
	failed := false
	if url := os.Getenv("CALL_URL"); url != "" {
		failed = !call(url)
	}
	for _, name := range names(os.Args[1:]) {
		fmt.Printf("%s=%s\n", name, os.Getenv(name))
	}
	if failed {
		os.Exit(1)
	}
}

func names(given []string) []string {
	if len(given) > 0 {
		return given
	}
	var found []string
	for _, entry := range os.Environ() {
		if name, _, _ := strings.Cut(entry, "="); strings.HasPrefix(name, "PUNCTUAL_") {
			found = append(found, name)
		}
	}
	sort.Strings(found)
	return found
}

func call(url string) bool {
	client := &http.Client{Timeout: 10 * time.Second}
	request, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		fmt.Printf("CALL_URL %s: %v\n", url, err)
		return false
	}
	if strings.HasPrefix(url, "https://") {
		if ca, err := os.ReadFile(serviceAccount + "ca.crt"); err == nil {
			pool := x509.NewCertPool()
			pool.AppendCertsFromPEM(ca)
			client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
		}
		if token, err := os.ReadFile(serviceAccount + "token"); err == nil {
			request.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
		}
	}
	answer, err := client.Do(request)
	if err != nil {
		fmt.Printf("CALL_URL %s: %v\n", url, err)
		return false
	}
	defer answer.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(answer.Body, 4096))
	fmt.Printf("CALL_URL %s: HTTP %d %s\n", url, answer.StatusCode, strings.TrimSpace(string(body)))
	return answer.StatusCode < 400
}

func serve(address string) {
	hostname, _ := os.Hostname()
	handler := http.HandlerFunc(func(writer http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(writer, "hello from %s\n", hostname)
	})
	server := &http.Server{Addr: address, Handler: handler, ReadHeaderTimeout: 5 * time.Second}
	if err := server.ListenAndServe(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
