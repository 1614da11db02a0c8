package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// minimal is the smallest configuration that loads: an id and one provider.
const minimal = `broker:
  id: test
  storage:
    default: mem
    default_retention_period: 1d
    default_retention_bytes: none
    providers:
      mem:
        type: memory
        snapshot_dir: none
`

// writeFiles writes each name to content under a new directory and returns
// the directory. Names may hold subdirectories.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.ReplaceAll(content, "$DIR", dir)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// parseYAML writes src as saguin.yaml ($DIR replaced by its directory) and
// parses it.
func parseYAML(t *testing.T, src string) (*Config, error) {
	t.Helper()
	dir := writeFiles(t, map[string]string{"saguin.yaml": src})
	return Parse(filepath.Join(dir, "saguin.yaml"))
}

func findings(t *testing.T, err error) []Finding {
	t.Helper()
	if err == nil {
		return nil
	}
	e, ok := err.(*Error)
	if !ok {
		t.Fatalf("error is %T, not *config.Error: %v", err, err)
	}
	return e.Findings
}

// refused asserts that src is refused with a finding naming key, on line when
// it is not 0, whose message holds every one of words.
func refused(t *testing.T, src, key string, line int, words ...string) {
	t.Helper()
	cfg, err := parseYAML(t, src)
	if err == nil {
		t.Fatalf("accepted; want a finding on %s", key)
	}
	if cfg != nil {
		t.Errorf("a configuration was returned beside findings about the file itself")
	}
	for _, f := range findings(t, err) {
		if f.Key != key {
			continue
		}
		if line != 0 && f.Line != line {
			t.Errorf("finding on %s is at line %d, want %d: %s", key, f.Line, line, f)
		}
		text := f.String()
		for _, w := range words {
			if !strings.Contains(text, w) {
				t.Errorf("finding %q does not say %q", text, w)
			}
		}
		if !strings.Contains(text, "saguin.yaml") {
			t.Errorf("finding %q does not name the file", text)
		}
		return
	}
	t.Fatalf("no finding names %s; got:\n%v", key, err)
}

func accepted(t *testing.T, src string) *Config {
	t.Helper()
	cfg, err := parseYAML(t, src)
	if err != nil {
		t.Fatalf("refused:\n%v", err)
	}
	return cfg
}

// lineOf returns the 1-based line of the first line of src holding s.
func lineIn(t *testing.T, src, s string) int {
	t.Helper()
	for i, l := range strings.Split(src, "\n") {
		if strings.Contains(l, s) {
			return i + 1
		}
	}
	t.Fatalf("%q is not in the configuration", s)
	return 0
}

// certPair writes a self-signed ECDSA certificate and its key to dir and
// returns their paths; the certificate also serves as an authority.
func certPair(t *testing.T, dir, name string) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	cert, key = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// A $7$ line as mosquitto_passwd writes one (mosquitto_passwd -H sha512-pbkdf2
// -I 1000; the password is pw3). A hash is decoded at load, so it must be
// well-formed; it need not verify here.
const passwdLine = "device-7:$7$1000$WTkjeWj4vkFekFiH$y0XtoOXRdS1MmgEN5cwGiZ+LOKCFlxL9anNZuGNeQhOZGf+pCtSwN4zS7/8TeD98mJTY1whP9iXZ1FDJYgtGLg==\n"
