package certs_test

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/netloop/certs"
	"github.com/saguin-edge/saguin/netloop/certs/certstest"
)

func TestNameIsCommonNameElseFirstDNSName(t *testing.T) {
	ca := certstest.NewCA(t, "ca")
	for _, c := range []struct {
		spec certstest.Spec
		want string
	}{
		{certstest.Spec{CN: "device 7", DNSNames: []string{"d7.example"}}, "device 7"},
		{certstest.Spec{DNSNames: []string{"d8.example", "other.example"}}, "d8.example"},
		{certstest.Spec{}, ""},
	} {
		l := ca.Issue(t, c.spec)
		leaf, _ := x509.ParseCertificate(l.TLS.Certificate[0])
		if got := certs.Name(leaf); got != c.want {
			t.Errorf("%+v: name %q, want %q", c.spec, got, c.want)
		}
	}
}

// A bad pair at startup is an error naming the listener; every door with a
// bad pair is named at once.
func TestLoadNamesEveryFailingListener(t *testing.T) {
	dir := t.TempDir()
	ca := certstest.NewCA(t, "ca")
	cert, key := ca.Server(t).Write(t, dir, "a")
	_, otherKey := ca.Server(t).Write(t, dir, "b")
	_, _, err := certs.Load([]certs.Files{
		{Listener: "broker.mqtt.listen.tcp[ok]", CertFile: cert, KeyFile: key},
		{Listener: "broker.mqtt.listen.tcp[fleet]", CertFile: cert, KeyFile: otherKey},
		{Listener: "broker.mqtt.listen.ws", CertFile: dir + "/missing.pem", KeyFile: key},
	})
	if err == nil {
		t.Fatal("a mismatched pair and a missing file loaded")
	}
	for _, want := range []string{"broker.mqtt.listen.tcp[fleet]", "broker.mqtt.listen.ws"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %s: %v", want, err)
		}
	}
	if strings.Contains(err.Error(), "tcp[ok]") {
		t.Errorf("error names the door that loaded: %v", err)
	}
}

// SIGUSR1's re-read: all or nothing; a renewed pair is served from the next
// handshake; a connection already open keeps its own.
func TestReloadAllOrNothing(t *testing.T) {
	dir := t.TempDir()
	ca := certstest.NewCA(t, "ca")
	first := ca.Issue(t, certstest.Spec{CN: "first", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	certA, keyA := first.Write(t, dir, "a")
	certB, keyB := ca.Server(t).Write(t, dir, "b")
	st, loaded, err := certs.Load([]certs.Files{
		{Listener: "a", CertFile: certA, KeyFile: keyA},
		{Listener: "b", CertFile: certB, KeyFile: keyB},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(loaded) != 2 || loaded[0].Expires.Before(time.Now()) {
		t.Fatalf("loaded %+v", loaded)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", st.Config("a"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { c.(*tls.Conn).Handshake(); c.Read(make([]byte, 1)); c.Close() }()
		}
	}()
	served := func() string {
		c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: ca.Pool()})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	open, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: ca.Pool()})
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()

	// Mid-renewal: a's certificate is new, its key still old; b is renewed
	// properly. Nothing changes.
	renewed := ca.Issue(t, certstest.Spec{CN: "renewed", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	certstest.WriteFile(t, certA, renewed.CertPEM)
	if _, err := st.Reload(); err == nil || !strings.Contains(err.Error(), "listener a") {
		t.Fatalf("a mismatched pair reloaded: %v", err)
	}
	if got := served(); got != "first" {
		t.Fatalf("after a failed reload door a serves %q, want first", got)
	}
	certstest.WriteFile(t, keyA, renewed.KeyPEM)
	// Reread reads the pair and serves it only once applied, so a SIGUSR1
	// whose other files fail can leave every door as it was.
	apply, loaded, err := st.Reread()
	if err != nil || len(loaded) != 2 {
		t.Fatalf("reread: %v %+v", err, loaded)
	}
	if got := served(); got != "first" {
		t.Fatalf("before apply door a serves %q, want first", got)
	}
	apply()
	if got := served(); got != "renewed" {
		t.Fatalf("after the reload door a serves %q, want renewed", got)
	}
	if got := open.ConnectionState().PeerCertificates[0].Subject.CommonName; got != "first" {
		t.Fatalf("the open connection's certificate changed to %q", got)
	}
}
