// Package certstest makes the certificates the TLS tests use, in the test
// itself: an ECDSA P-256 authority, server leaves and client certificates
// with a Common Name, only a DNS name, neither, a control character, from
// another authority, or expired; an intermediate authority, and a revocation
// list naming leaves.
package certstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// CA is an authority that signs leaves.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	// PEM is the authority's certificate, for a client_ca_file or --cafile.
	PEM []byte
}

var serial atomic.Int64

// NewCA makes an authority named cn.
func NewCA(t testing.TB, cn string) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(serial.Add(1)),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &CA{Cert: cert, Key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// Intermediate makes an authority named cn that ca signs: a leaf it issues
// verifies against ca's root only with the intermediate sent beside it.
func (ca *CA) Intermediate(t testing.TB, cn string) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(serial.Add(1)),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &CA{Cert: cert, Key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// RevocationList is a CRL, DER-encoded, that ca signs and that revokes
// each of leaves.
func (ca *CA) RevocationList(t testing.TB, leaves ...*Leaf) []byte {
	t.Helper()
	tmpl := &x509.RevocationList{
		Number:     big.NewInt(serial.Add(1)),
		ThisUpdate: time.Now().Add(-time.Minute),
		NextUpdate: time.Now().Add(time.Hour),
	}
	for _, l := range leaves {
		tmpl.RevokedCertificateEntries = append(tmpl.RevokedCertificateEntries, x509.RevocationListEntry{
			SerialNumber: l.Cert.SerialNumber, RevocationTime: time.Now().Add(-time.Minute),
		})
	}
	der, err := x509.CreateRevocationList(rand.Reader, tmpl, ca.Cert, ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

// Leaf is a signed certificate and its key.
type Leaf struct {
	CertPEM, KeyPEM []byte
	TLS             tls.Certificate
	Cert            *x509.Certificate
}

// Spec says what a leaf carries.
type Spec struct {
	CN       string
	DNSNames []string
	IPs      []net.IP
	Client   bool          // client authentication rather than server
	Expired  bool          // NotAfter an hour ago
	Validity time.Duration // 0 is a day
	// CRLs and OCSP are where the leaf says its revocation is published.
	CRLs, OCSP []string
}

// Issue signs a leaf.
func (ca *CA) Issue(t testing.TB, s Spec) *Leaf {
	t.Helper()
	key := newKey(t)
	notAfter := time.Now().Add(24 * time.Hour)
	if s.Validity > 0 {
		notAfter = time.Now().Add(s.Validity)
	}
	if s.Expired {
		notAfter = time.Now().Add(-time.Hour)
	}
	usage := x509.ExtKeyUsageServerAuth
	if s.Client {
		usage = x509.ExtKeyUsageClientAuth
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial.Add(1)),
		Subject:      pkix.Name{CommonName: s.CN},
		DNSNames:     s.DNSNames,
		IPAddresses:  s.IPs,
		NotBefore:    time.Now().Add(-2 * time.Hour),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},

		CRLDistributionPoints: s.CRLs,
		OCSPServer:            s.OCSP,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	l := &Leaf{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}),
	}
	l.TLS, err = tls.X509KeyPair(l.CertPEM, l.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	l.Cert = l.TLS.Leaf
	return l
}

// Server is a leaf for localhost and 127.0.0.1.
func (ca *CA) Server(t testing.TB) *Leaf {
	return ca.Issue(t, Spec{CN: "localhost", DNSNames: []string{"localhost"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}})
}

// Write puts the leaf's certificate and key in dir as <name>.pem and
// <name>.key, and returns their paths.
func (l *Leaf) Write(t testing.TB, dir, name string) (certFile, keyFile string) {
	t.Helper()
	certFile, keyFile = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+".key")
	WriteFile(t, certFile, l.CertPEM)
	WriteFile(t, keyFile, l.KeyPEM)
	return certFile, keyFile
}

// WriteCA puts the authority's certificate in dir as <name>.pem.
func (ca *CA) Write(t testing.TB, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name+".pem")
	WriteFile(t, p, ca.PEM)
	return p
}

// Pool is a pool holding the authority, for a client's RootCAs.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// WriteFile writes b to path, replacing it, failing the test on error.
func WriteFile(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
