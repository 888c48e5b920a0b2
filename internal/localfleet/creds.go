package localfleet

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"os"
	"path/filepath"
)

// Creds are the credentials every cluster of a fleet shares: one admin
// token and one service-account signing key.
type Creds struct {
	// User is the admin's name, in the token file and the kubeconfig.
	User      string
	Token     string
	TokenFile string
	// SAKey is the service-account signing key (PKCS#1 PEM).
	SAKey string
}

// NewCreds generates the credentials into dir: an admin user through
// RBAC's system:masters, with a random token.
func NewCreds(dir, user string) (*Creds, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	c := &Creds{User: user, TokenFile: filepath.Join(dir, "tokens.csv"), SAKey: filepath.Join(dir, "sa.key")}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(c.SAKey, keyPEM, 0o600); err != nil {
		return nil, err
	}
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	c.Token = hex.EncodeToString(b)
	// token,user,uid,"groups"
	line := c.Token + "," + user + "," + user + `,"system:masters"` + "\n"
	if err := os.WriteFile(c.TokenFile, []byte(line), 0o600); err != nil {
		return nil, err
	}
	return c, nil
}
