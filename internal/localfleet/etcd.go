package localfleet

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
)

// Etcd is one single-member etcd.
type Etcd struct {
	Name      string
	ClientURL string
	Proc      *Proc
}

// StartEtcd starts an etcd named name, its data in dir/<name>.etcd.
func (l *Launcher) StartEtcd(dir, name string) (*Etcd, error) {
	clientPort, err := FreePort()
	if err != nil {
		return nil, err
	}
	peerPort, err := FreePort()
	if err != nil {
		return nil, err
	}
	bin, err := l.tool("etcd")
	if err != nil {
		return nil, err
	}
	client := fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	peer := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	l.logf("starting etcd %s at %s", name, client)
	p, err := l.StartProc(dir, name, bin,
		"--name", name, "--data-dir", filepath.Join(dir, name+".etcd"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", name+"="+peer,
		// Throw-away data: no fsync keeps it fast on slow disks.
		"--unsafe-no-fsync", "--log-level", "warn")
	if err != nil {
		return nil, err
	}
	return &Etcd{Name: name, ClientURL: client, Proc: p}, nil
}

// WaitReady waits for etcd's /health.
func (e *Etcd) WaitReady() error {
	return Wait(e.Proc, "/health", func() error {
		resp, err := http.Get(e.ClientURL + "/health")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var h struct{ Health string }
		if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
			return err
		}
		if h.Health != "true" {
			return fmt.Errorf("health %q", h.Health)
		}
		return nil
	})
}

// Has reports whether key exists, through etcd's v3 JSON gateway.
func (e *Etcd) Has(key string) (bool, error) {
	body, _ := json.Marshal(map[string]any{"key": base64.StdEncoding.EncodeToString([]byte(key)), "count_only": true})
	resp, err := http.Post(e.ClientURL+"/v3/kv/range", "application/json", bytes.NewReader(body))
	if err != nil {
		return false, fmt.Errorf("etcd %s: %w", e.Name, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("etcd %s: range %s: %s: %s", e.Name, key, resp.Status, data)
	}
	// int64 fields are JSON strings; an absent count is zero.
	var r struct {
		Count string `json:"count"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return false, fmt.Errorf("etcd %s: %w: %s", e.Name, err, data)
	}
	return r.Count != "" && r.Count != "0", nil
}
