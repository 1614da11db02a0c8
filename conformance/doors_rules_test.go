package conformance

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Checklist-operations.md C.1-C.3 rules the audit of issue 15 found untested
// or tested in part, through the binary, one per rule and named after it.

// refusedAtLoad writes cfg into a fresh directory and requires both the start
// and --check-config to refuse it with output holding every one of wants.
func refusedAtLoad(t *testing.T, cfg brokerConfig, wants ...string) {
	t.Helper()
	saguinOnly(t, "the test starts saguin with its own configuration")
	dir := t.TempDir()
	code, out := startFailing(t, cfg, dir)
	check := exec.Command(binPath, "--check-config", filepath.Join(dir, "saguin.yaml"))
	check.Dir = dir
	out2, err := check.CombinedOutput()
	for _, want := range wants {
		if code == 0 || !strings.Contains(out, want) {
			t.Errorf("start: exit %d, want non-zero saying %q:\n%s", code, want, out)
		}
		if err == nil || !strings.Contains(string(out2), want) {
			t.Errorf("--check-config: %v, want a refusal saying %q:\n%s", err, want, out2)
		}
	}
}

// C.2 #23 [GAP-3]: a ws door has no path key (it serves every request path)
// and no subprotocol key; an unknown key is refused rather than ignored, so
// `path: /mqtt` under a ws door stops the start and --check-config, naming
// the key - as does a subprotocol setting.
func TestWebSocketDoorHasNoPathOrSubprotocolKey(t *testing.T) {
	for _, c := range []struct{ key, line string }{
		{"broker.mqtt.listen.ws.path", "path: /mqtt"},
		{"broker.mqtt.listen.ws.subprotocol", "subprotocol: mqtt"},
	} {
		t.Run(c.line, func(t *testing.T) {
			refusedAtLoad(t, brokerConfig{Listen: "ws:\n  address: 127.0.0.1:0\n  " + c.line}, c.key)
		})
	}
}

// C.1 #3, RFC 0002 "TLS on a listener": there is no default certificate and
// nothing is self-generated - a tls block without cert_file, and an empty
// `tls: {}`, are refused naming each missing key, never served with a
// certificate the broker made up.
func TestTLSBlockWithoutACertificateIsRefusedNothingGenerated(t *testing.T) {
	for _, c := range []struct {
		what, tls string
		keys      []string
	}{
		{"no cert_file", "tls:\n    key_file: $DIR/k.pem", []string{"broker.mqtt.listen.tcp.tls.cert_file is missing"}},
		{"tls: {}", "tls: {}", []string{"broker.mqtt.listen.tcp.tls.cert_file is missing", "broker.mqtt.listen.tcp.tls.key_file is missing"}},
	} {
		t.Run(c.what, func(t *testing.T) {
			refusedAtLoad(t, brokerConfig{Listen: "tcp:\n  address: 127.0.0.1:0\n  " + c.tls}, c.keys...)
		})
	}
}

// C.2 #27 [VAL], RFC 0002 "Which web pages may connect": an allowed_origins
// entry is exactly scheme://host[:port] - an entry with a wildcard, a query,
// user info or a fragment is refused at load naming the key and the entry.
func TestWebSocketOriginEntryWithWildcardQueryUserInfoOrFragmentIsRefused(t *testing.T) {
	for _, entry := range []string{"https://*.example", "https://a.example?x=1", "https://u@a.example", "https://a.example#top"} {
		t.Run(entry, func(t *testing.T) {
			refusedAtLoad(t, brokerConfig{Listen: "ws:\n  address: 127.0.0.1:0\n  allowed_origins: [\"" + entry + "\"]"},
				`broker.mqtt.listen.ws.allowed_origins "`+entry+`"`)
		})
	}
}

// C.3 #35, RFC 0002 "TLS on a listener": a unix door's path is NUL-free - a
// path with a NUL byte (which the kernel would cut short) is refused at load
// naming the key.
func TestUnixDoorPathWithANULIsRefused(t *testing.T) {
	refusedAtLoad(t, brokerConfig{Listen: "unix:\n  path: \"$DIR/a\\0b.sock\""}, "broker.mqtt.listen.unix.path", "NUL")
}
