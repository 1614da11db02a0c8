package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func passwdFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "passwd")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPasswordFileAcceptsMosquittoHashes(t *testing.T) {
	pf, f := ReadPasswordFile(passwdFile(t, passwdLine+"old:$6$8K5rmLkazON0wx5U$WLCPviYw71YYESV0bPvY7gekjwCGUGYFPix6I5kFsCYsKnktaCLZDyhlfFf6HghnT8iLHTIpPDG72XN2Viq31g==\n\n# a comment\n"), false)
	if len(f) != 0 || len(pf.Entries) != 2 || pf.Entries[1].User != "old" || pf.Entries[1].Line != 2 {
		t.Errorf("%+v %v", pf, f)
	}
}

func TestPasswordFileRefusals(t *testing.T) {
	cases := []struct {
		name, content string
		operations    bool
		line          int
		words         []string
	}{
		{"Argon2idIsRefusedNamingTheLine", passwdLine + "x:$argon2id$v=19$m=65536,t=2,p=1$c2FsdA$aGFzaA\n", false, 2, []string{"argon2id", `"x"`}},
		{"AUserNamedTwiceIsRefusedNamingBothLines", passwdLine + passwdLine, false, 2, []string{"lines 1 and 2"}},
		{"AThirdFieldOnAnMQTTFileIsRefused", strings.TrimSuffix(passwdLine, "\n") + ":/metrics\n", false, 1, []string{"third field"}},
		{"AnUnknownHashIsRefused", "x:plaintext\n", false, 1, []string{"$6$", "$7$"}},
		{"AScopeNamingNoRouteIsRefused", strings.TrimSuffix(passwdLine, "\n") + ":/v1/operationsomething\n", true, 1, []string{"names no route"}},
		{"ALineWithNoHashIsRefused", "x\n", false, 1, []string{"no password hash"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, f := ReadPasswordFile(passwdFile(t, c.content), c.operations)
			if len(f) != 1 || f[0].Line != c.line {
				t.Fatalf("findings %v", f)
			}
			for _, w := range c.words {
				if !strings.Contains(f[0].String(), w) {
					t.Errorf("%q does not say %q", f[0].String(), w)
				}
			}
		})
	}
}

func TestOperationsScopesMatchAtASegmentBoundary(t *testing.T) {
	base := strings.TrimSuffix(passwdLine, "\n")
	pf, f := ReadPasswordFile(passwdFile(t, base+":/metrics,/v1/operations\n"), true)
	if len(f) != 0 || strings.Join(pf.Entries[0].Scopes, ",") != "/metrics,/v1/operations" {
		t.Errorf("%+v %v", pf, f)
	}
	for _, ok := range []string{"/v1/operations/config", "/v1/operations/queues/jobs", "/health"} {
		if !ServedRoute(ok) {
			t.Errorf("%s refused", ok)
		}
	}
	for _, bad := range []string{"/v1/op", "/metricsx", "metrics", ""} {
		if ServedRoute(bad) {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestCheckFilesReportsEveryUnreadableFileAtOnce(t *testing.T) {
	cfg := accepted(t, with(`  mqtt:
    password_file: /nonexistent/clients.passwd
    listen:
      tcp:
        address: :8883
        tls:
          cert_file: /nonexistent/cert.pem
          key_file: /nonexistent/key.pem
          client_ca_file: /nonexistent/ca.pem
`, ""))
	f := cfg.CheckFiles()
	var keys []string
	for _, x := range f {
		keys = append(keys, x.Key)
	}
	for _, want := range []string{"broker.mqtt.password_file", "broker.mqtt.listen.tcp.tls.cert_file", "broker.mqtt.listen.tcp.tls.key_file", "broker.mqtt.listen.tcp.tls.client_ca_file"} {
		if !strings.Contains(strings.Join(keys, " "), want) {
			t.Errorf("no finding on %s: %v", want, f)
		}
	}
}

func TestLoadReturnsTheConfigurationBesideFileFindings(t *testing.T) {
	cfg, err := parseYAML(t, with("  mqtt:\n    password_file: /nonexistent/p\n", ""))
	if err != nil {
		t.Fatal(err)
	}
	cfg2, err := Load(cfg.File)
	if err == nil || cfg2 == nil {
		t.Fatalf("Load = %v, %v; want the configuration and the file finding", cfg2, err)
	}
}

func TestCertificateAndKeyThatDoNotMatchAreRefused(t *testing.T) {
	dir := t.TempDir()
	cert, _ := certPair(t, dir, "a")
	_, key := certPair(t, dir, "b")
	cfg := accepted(t, with("  mqtt:\n    listen:\n      tcp:\n        address: :8883\n        tls:\n          cert_file: "+cert+"\n          key_file: "+key+"\n", ""))
	if f := cfg.CheckFiles(); len(f) != 1 || !strings.Contains(f[0].String(), "cannot be used") {
		t.Errorf("%v", f)
	}
}

func TestOperationsPasswordFileNamingNobodyIsRefused(t *testing.T) {
	p := passwdFile(t, "# nobody yet\n")
	cfg := accepted(t, with("  operations:\n    password_file: "+p+"\n    listen:\n      tcp:\n        address: 127.0.0.1:9090\n", ""))
	if f := cfg.CheckFiles(); len(f) == 0 || !strings.Contains(f[0].String(), "names no users") {
		t.Errorf("%v", f)
	}
}

func TestMQTTPasswordFileNamingNobodyOnADoorAdmittingNobodyElseIsRefused(t *testing.T) {
	p := passwdFile(t, "\n")
	cfg := accepted(t, with("  mqtt:\n    password_file: "+p+"\n", ""))
	if f := cfg.CheckFiles(); len(f) != 1 || f[0].Key != "broker.mqtt.password_file" || !strings.Contains(f[0].String(), "names no users") {
		t.Errorf("%v", f)
	}
	cfg = accepted(t, with("  mqtt:\n    password_file: "+p+"\n    allow_anonymous: true\n", ""))
	if f := cfg.CheckFiles(); len(f) != 0 {
		t.Errorf("a door admitting anonymous clients beside an empty file: %v", f)
	}
}

func TestLoadReportsSchemaAndFileFindingsTogether(t *testing.T) {
	cfg, err := parseYAML(t, with("  mqtt:\n    password_file: /nonexistent/p\n", ""))
	if err != nil {
		t.Fatal(err)
	}
	src, _ := os.ReadFile(cfg.File)
	bad := strings.Replace(string(src), "  id: test\n", "  id: test\n  log_level: loud\n", 1)
	if err := os.WriteFile(cfg.File, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Load(cfg.File)
	if got != nil || err == nil || !strings.Contains(err.Error(), "log_level") || !strings.Contains(err.Error(), "/nonexistent/p cannot be read") {
		t.Errorf("Load = %v, %v", got, err)
	}
}

func TestANamedFileThatIsNotARegularFileIsRefused(t *testing.T) {
	cfg := accepted(t, with("  mqtt:\n    password_file: /dev/null\n", ""))
	if f := cfg.CheckFiles(); len(f) != 1 || !strings.Contains(f[0].String(), "not a regular file") {
		t.Errorf("%v", f)
	}
}

// TestCheckFilesMakesEveryACLRefusal: --check-config and the start read the
// acl_file's contents, and each refusal names the acl_file and its line.
func TestCheckFilesMakesEveryACLRefusal(t *testing.T) {
	p := passwdFile(t, passwdLine)
	aclPath := filepath.Join(t.TempDir(), "acl.yaml")
	os.WriteFile(aclPath, []byte("roles:\n  r:\n    - channel: nope\n      allow: [read]\nclients:\n  a: [r]\n"), 0o600)
	cfg := accepted(t, with("  mqtt:\n    password_file: "+p+"\n    acl_file: "+aclPath+"\n", ""))
	f := cfg.CheckFiles()
	if len(f) != 2 || f[0].File != aclPath || f[0].Line != 3 || !strings.Contains(f[0].String(), "not configured") || f[1].Line != 5 || !strings.Contains(f[1].String(), "users:") {
		t.Errorf("%v", f)
	}
	os.WriteFile(aclPath, []byte("roles:\n  r:\n    - topic: \"#\"\n      allow: [read]\nusers:\n  \"*\": [r]\n"), 0o600)
	if f := cfg.CheckFiles(); len(f) != 0 {
		t.Errorf("a good acl_file: %v", f)
	}
	if a, err := cfg.LoadACL(); err != nil || len(a.Entries) != 1 {
		t.Errorf("LoadACL %v %v", a, err)
	}
}
