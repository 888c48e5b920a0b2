package localfleet

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// APIServer is one kube-apiserver.
type APIServer struct {
	Name   string
	URL    string
	CAFile string
	Dir    string
	Creds  *Creds
	// Proc is the running process (the latest, after a Restart).
	Proc     *Proc
	args     []string
	client   *http.Client
	started  int
	launcher *Launcher
}

// StartAPIServer starts kube-apiserver on etcd main, with the
// --etcd-servers-overrides value overrides ("" leaves the flag out) and
// the flags extra. Its serving certificate is self-signed, in
// dir/<name>-certs.
func (l *Launcher) StartAPIServer(dir, name string, creds *Creds, main *Etcd, overrides string, extra ...string) (*APIServer, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	certDir := filepath.Join(dir, fileName(name)+"-certs")
	a := &APIServer{Name: name, URL: fmt.Sprintf("https://127.0.0.1:%d", port), CAFile: filepath.Join(certDir, "apiserver.crt"),
		Dir: dir, Creds: creds, launcher: l}
	a.args = []string{
		"--etcd-servers", main.ClientURL,
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", fmt.Sprint(port),
		"--cert-dir", certDir,
		"--token-auth-file", creds.TokenFile, "--authorization-mode", "RBAC",
		"--service-account-key-file", creds.SAKey, "--service-account-signing-key-file", creds.SAKey,
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-cluster-ip-range", "10.96.0.0/16",
	}
	a.args = append(a.args, extra...)
	return a, a.Start(overrides)
}

// Start starts the process (again, after a stop of Proc), without waiting
// for it: on the same port and etcd, with the --etcd-servers-overrides
// value overrides.
func (a *APIServer) Start(overrides string) error {
	bin, err := a.launcher.tool("kube-apiserver")
	if err != nil {
		return err
	}
	args := a.args
	if overrides != "" {
		args = append(args[:len(args):len(args)], "--etcd-servers-overrides", overrides)
		a.launcher.logf("starting kube-apiserver %s at %s, --etcd-servers-overrides=%s", a.Name, a.URL, overrides)
	} else {
		a.launcher.logf("starting kube-apiserver %s at %s", a.Name, a.URL)
	}
	a.started++
	p, err := a.launcher.StartProc(a.Dir, fmt.Sprintf("%s-%d", fileName(a.Name), a.started), bin, args...)
	if err != nil {
		return err
	}
	a.Proc, a.client = p, nil
	return nil
}

// Restart stops kube-apiserver and starts it again, on the same port and
// etcd, with another --etcd-servers-overrides value, and waits for it.
func (a *APIServer) Restart(overrides string) error {
	a.Proc.Stop()
	if err := a.Start(overrides); err != nil {
		return err
	}
	return a.WaitReady()
}

// WaitReady waits for the self-signed serving certificate, /readyz, and
// the default Namespace (the inventory's).
func (a *APIServer) WaitReady() error {
	err := Wait(a.Proc, "serving certificate", func() error {
		pemData, err := os.ReadFile(a.CAFile)
		if err != nil {
			return err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pemData) {
			return errors.New("no certificate in " + a.CAFile)
		}
		a.client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		return nil
	})
	if err != nil {
		return err
	}
	for _, probe := range []struct{ what, path string }{{"/readyz", "/readyz"}, {"Namespace default", "/api/v1/namespaces/default"}} {
		err := Wait(a.Proc, probe.what, func() error {
			code, body, err := a.Do("GET", probe.path, "", nil)
			if err == nil && code != http.StatusOK {
				err = fmt.Errorf("%d: %s", code, body)
			}
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// Do sends one request as the admin and returns the status code and body.
// It needs WaitReady first (the client trusts the serving certificate).
func (a *APIServer) Do(method, path, contentType string, body []byte) (int, []byte, error) {
	if a.client == nil {
		return 0, nil, fmt.Errorf("%s: not ready (no serving certificate read yet)", a.Name)
	}
	req, err := http.NewRequest(method, a.URL+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+a.Creds.Token)
	req.Header.Set("Accept", "application/json")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

// StartControllerManager starts kube-controller-manager for a, with a
// kubeconfig of its own, and waits for its /healthz.
func (l *Launcher) StartControllerManager(a *APIServer) (*Proc, error) {
	kubeconfig := filepath.Join(a.Dir, fileName(a.Name)+"-kcm.kubeconfig")
	if err := WriteKubeconfig(kubeconfig, a.Creds, a); err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	bin, err := l.tool("kube-controller-manager")
	if err != nil {
		return nil, err
	}
	l.logf("starting kube-controller-manager %s", a.Name)
	p, err := l.StartProc(a.Dir, fileName(a.Name)+"-kcm", bin,
		"--kubeconfig", kubeconfig,
		"--bind-address", "127.0.0.1", "--secure-port", fmt.Sprint(port),
		"--cert-dir", filepath.Join(a.Dir, fileName(a.Name)+"-kcm-certs"),
		"--leader-elect=false",
		"--service-account-private-key-file", a.Creds.SAKey,
		"--root-ca-file", a.CAFile)
	if err != nil {
		return nil, err
	}
	// Its self-signed certificate is not worth trusting for a health probe.
	probe := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	err = Wait(p, "/healthz", func() error {
		resp, err := probe.Get(fmt.Sprintf("https://127.0.0.1:%d/healthz", port))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", resp.Status, body)
		}
		return nil
	})
	return p, err
}

// WriteKubeconfig writes a kubeconfig with one context per server, named
// after it, as creds' user; the first is the current context.
func WriteKubeconfig(path string, creds *Creds, servers ...*APIServer) error {
	contexts := make([]KubeContext, len(servers))
	for i, s := range servers {
		contexts[i] = KubeContext{Name: s.Name, Server: s}
	}
	return WriteKubeconfigContexts(path, creds, contexts)
}
