package peer

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// tlsFiles are the certificate every TLS door of one run serves: an ECDSA
// P-256 leaf for 127.0.0.1 from an authority of the run's own, so each peer
// handshakes with the same key and the generator trusts that one authority.
type tlsFiles struct {
	CertFile, KeyFile string
	pool              *x509.CertPool
}

// clientTLS is what the generator dials a TLS door with: the run's
// authority, full handshakes (no session cache), and X25519 alone - what an
// OpenSSL 3.0 client such as mosquitto_pub offers, so neither peer is
// measured on a key exchange the other is never offered (Go's default would
// put X25519MLKEM768 first, which Sagüin then chooses and Mosquitto cannot).
func (f *tlsFiles) clientTLS() *tls.Config {
	return &tls.Config{RootCAs: f.pool, ServerName: "127.0.0.1", CurvePreferences: []tls.CurveID{tls.X25519}}
}

// writeTLS makes the authority and the leaf and writes the leaf's
// certificate and key in dir.
func writeTLS(dir string) (*tlsFiles, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("making the run's authority key: %w", err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "bench authority"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("making the run's authority: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("reading the run's authority: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("making the broker's key: %w", err)
	}
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("making the broker's certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding the broker's key: %w", err)
	}
	f := &tlsFiles{CertFile: filepath.Join(dir, "bench-cert.pem"), KeyFile: filepath.Join(dir, "bench-key.pem"), pool: x509.NewCertPool()}
	f.pool.AddCert(ca)
	if err := os.WriteFile(f.CertFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}), 0o600); err != nil {
		return nil, fmt.Errorf("writing the broker's certificate: %w", err)
	}
	if err := os.WriteFile(f.KeyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return nil, fmt.Errorf("writing the broker's key: %w", err)
	}
	return f, nil
}
