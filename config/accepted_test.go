package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The long example at the top of RFC 0002 "Configuration", verbatim.
func TestRFCConfigurationExampleParses(t *testing.T) {
	cfg, err := Parse("testdata/rfc-example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b := cfg.Broker
	if b.ID != "edge-1" || b.MQTT.MinProtocolVersion != 4 || len(b.MQTT.Listeners) != 3 {
		t.Errorf("broker %+v", b)
	}
	if b.Operations == nil || len(b.Operations.Listeners) != 2 || b.Operations.MinScrapeInterval != time.Minute {
		t.Errorf("operations %+v", b.Operations)
	}
	if len(b.Storage.Providers) != 2 || b.Storage.DefaultRetentionPeriod != 3*Day || b.Storage.DefaultRetentionBytes != 0 {
		t.Errorf("storage %+v", b.Storage)
	}
	if b.Limits.PublishBytes != 128<<10 || b.Limits.MaxConnectSize != 100<<10 || b.Limits.MaxKeepalive != 0 {
		t.Errorf("limits %+v", b.Limits)
	}
	want := map[string]string{"device-state": "latest", "events": "append", "jobs": "queue", "presence": "latest"}
	for _, ch := range cfg.Channels {
		if want[ch.Name] != ch.Type {
			t.Errorf("channel %s is %s", ch.Name, ch.Type)
		}
	}
	jobs := cfg.Channels[2]
	if jobs.Retry.Backoff != BackoffExponential || jobs.Retry.BackoffBase != 2*time.Second || jobs.JobExpiresAfter != 6*time.Hour {
		t.Errorf("jobs %+v", jobs)
	}
	if len(cfg.DeadLetters) != 1 || cfg.DeadLetters[0].Filter != "iot/+/+/work/__dlq" || cfg.DeadLetters[0].RetentionPeriod != 30*Day || cfg.DeadLetters[0].RetentionBytes != 1<<30 {
		t.Errorf("dead letters %+v", cfg.DeadLetters)
	}
	presence := cfg.Channels[3]
	if presence.Filter != "presence/#" || presence.RetentionPeriod != 0 || presence.Storage != "volatile" {
		t.Errorf("presence %+v", presence)
	}
}

// The same example with every file it names created, so Load's file checks
// pass.
func TestRFCConfigurationExampleLoadsWithItsFiles(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("testdata/rfc-example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.NewReplacer("/etc/saguin", dir, "/var/lib/saguin", dir, "/run/saguin", dir).Replace(string(src))
	if err := os.MkdirAll(filepath.Join(dir, "tls"), 0o755); err != nil {
		t.Fatal(err)
	}
	certPair(t, filepath.Join(dir, "tls"), "cert")
	if err := os.Rename(filepath.Join(dir, "tls", "cert-key.pem"), filepath.Join(dir, "tls", "key.pem")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "clients.passwd"), []byte(passwdLine), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "saguin.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err != nil {
		t.Fatal(err)
	}
}

func TestDefaultsAreFilled(t *testing.T) {
	cfg := accepted(t, minimal+"channels:\n  events:\n    type: append\n  jobs:\n    type: queue\n  s:\n    type: latest\n")
	l := cfg.Broker.Limits
	if l.MaxMessageSize != 1<<20 || l.MaxTopicLength != 1024 || l.MaxClientIDLength != 256 || l.MaxHeaderCount != 32 ||
		l.MaxHeaderBytes != 8<<10 || l.MaxConnections != 10000 || l.MaxSubscriptions != 10000 || l.MaxTopicLevels != 200 ||
		l.MaxSessionExpiry != 30*Day || l.MaxKeepalive != 0 || l.PublishRate != 0 || l.PublishBytes != 0 ||
		l.WriteTimeout != 5*time.Second || l.ConnectTimeout != 10*time.Second || l.MaxConnectSize != 100<<10 ||
		l.MaxConnectRate != 500 || l.SessionQueueBytes != 1<<20 {
		t.Errorf("limits %+v", l)
	}
	b := cfg.Broker
	if b.LogLevel != "info" || b.MQTT.MinProtocolVersion != 4 || b.Operations != nil ||
		b.Retained.Storage != "mem" || b.Retained.RetentionPeriod != 0 || b.QoS2.MaxInflightPerClient != 20 ||
		b.QoS2.ExpiresAfter != 5*time.Minute || b.Share.ExpiresAfter != 0 || b.Session.Storage != "mem" ||
		b.Session.AckCommitInterval != 200*time.Millisecond {
		t.Errorf("broker %+v", b)
	}
	events, jobs, s := cfg.Channels[0], cfg.Channels[1], cfg.Channels[2]
	if events.Filter != "events/#" || events.Storage != "mem" || events.RetentionPeriod != Day || events.Start != StartFloor {
		t.Errorf("events %+v", events)
	}
	if jobs.VisibilityTimeout != 30*time.Second || jobs.Retry.MaxAttempts != 5 || jobs.Retry.Backoff != BackoffNone || jobs.JobExpiresAfter != 0 {
		t.Errorf("jobs %+v", jobs)
	}
	if s.DeletionRetentionPeriod != Day {
		t.Errorf("latest %+v", s)
	}
}

func TestNoListenerNamedGetsTCPOnEveryInterface(t *testing.T) {
	cfg := accepted(t, minimal)
	ls := cfg.Broker.MQTT.Listeners
	if len(ls) != 1 || ls[0].Kind != KindTCP || ls[0].Address != ":1883" || !ls[0].AllowAnonymous {
		t.Errorf("listeners %+v", ls)
	}
}

func TestOneUnixListenerTurnsTheDefaultOff(t *testing.T) {
	cfg := accepted(t, with("  mqtt:\n    listen:\n      unix:\n        path: /run/saguin/saguin.sock\n", ""))
	ls := cfg.Broker.MQTT.Listeners
	if len(ls) != 1 || ls[0].Kind != KindUnix || ls[0].Mode != 0o660 {
		t.Errorf("listeners %+v", ls)
	}
}

func TestSeveralListenersOfAKindAreNamed(t *testing.T) {
	cfg := accepted(t, with(`  mqtt:
    password_file: /etc/saguin/clients.passwd
    allow_anonymous: false
    listen:
      tcp:
        - name: local
          address: 127.0.0.1:1883
          allow_anonymous: true
        - name: fleet
          address: 0.0.0.0:8883
          tls:
            cert_file: /etc/saguin/tls/cert.pem
            key_file: /etc/saguin/tls/key.pem
      unix:
        path: /run/saguin/saguin.sock
        password_file: /etc/saguin/local.passwd
`, ""))
	ls := cfg.Broker.MQTT.Listeners
	if len(ls) != 3 || ls[0].Key != "broker.mqtt.listen.tcp[local]" || ls[1].Name != "fleet" {
		t.Fatalf("listeners %+v", ls)
	}
	if !ls[0].AllowAnonymous || ls[1].AllowAnonymous || ls[1].PasswordFile != "/etc/saguin/clients.passwd" {
		t.Errorf("tcp doors resolve %+v / %+v", ls[0], ls[1])
	}
	// A door naming its own password file admits its own users and nobody
	// else unless it writes allow_anonymous.
	if ls[2].PasswordFile != "/etc/saguin/local.passwd" || ls[2].AllowAnonymous {
		t.Errorf("unix door %+v", ls[2])
	}
}

func TestAllowAnonymousTakesItsAnswerFromThePasswordFile(t *testing.T) {
	cfg := accepted(t, with("  mqtt:\n    password_file: /etc/p\n", ""))
	if cfg.Broker.MQTT.Listeners[0].AllowAnonymous {
		t.Error("a password file with allow_anonymous unwritten admits only who it names")
	}
}

func TestMinProtocolVersionQuotedOrNot(t *testing.T) {
	for _, v := range []string{"5", `"5"`} {
		if cfg := accepted(t, with("  mqtt:\n    min_protocol_version: "+v+"\n", "")); cfg.Broker.MQTT.MinProtocolVersion != 5 {
			t.Errorf("%s read as %d", v, cfg.Broker.MQTT.MinProtocolVersion)
		}
	}
	for _, v := range []string{"3.1.1", `"3.1.1"`} {
		if cfg := accepted(t, with("  mqtt:\n    min_protocol_version: "+v+"\n", "")); cfg.Broker.MQTT.MinProtocolVersion != 4 {
			t.Errorf("%s read as %d", v, cfg.Broker.MQTT.MinProtocolVersion)
		}
	}
}

func TestPortZeroNeverClashes(t *testing.T) {
	accepted(t, with("  mqtt:\n    listen:\n      tcp:\n        address: 127.0.0.1:0\n      ws:\n        address: 127.0.0.1:0\n", ""))
}

func TestDifferentHostsOnOnePortDoNotClash(t *testing.T) {
	accepted(t, with("  mqtt:\n    listen:\n      tcp:\n        address: 127.0.0.1:1883\n      ws:\n        address: 127.0.0.2:1883\n", ""))
}

func TestMQTTAndOperationsDoorsMayShareAName(t *testing.T) {
	accepted(t, with(`  mqtt:
    listen:
      tcp:
        - name: fleet
          address: 127.0.0.1:1883
  operations:
    listen:
      tcp:
        - name: fleet
          address: 127.0.0.1:9090
`, ""))
}

func TestOperationsRoutableAddressWithAPasswordFileIsAccepted(t *testing.T) {
	accepted(t, with("  operations:\n    password_file: /etc/saguin/operations.passwd\n    listen:\n      tcp:\n        address: 0.0.0.0:9090\n", ""))
	accepted(t, with("  operations:\n    listen:\n      tcp:\n        address: 0.0.0.0:9090\n        tls:\n          cert_file: /c.pem\n          key_file: /k.pem\n          client_ca_file: /ca.pem\n", ""))
}

func TestACLFileWithAClientCertificateAuthorityIsAccepted(t *testing.T) {
	cfg := accepted(t, with(`  mqtt:
    acl_file: /etc/saguin/acl.yaml
    listen:
      tcp:
        address: :8883
        tls:
          cert_file: /c.pem
          key_file: /k.pem
          client_ca_file: /ca.pem
          require_certificate: false
`, ""))
	// require_certificate: false admits a client nothing identifies: said,
	// not refused.
	if len(cfg.Notes) != 1 || !strings.Contains(cfg.Notes[0].Message, "nothing identifies") {
		t.Errorf("notes %v", cfg.Notes)
	}
}

func TestWriteTimeoutAcceptsMillisecondsAndNone(t *testing.T) {
	if cfg := accepted(t, with("  limits:\n    write_timeout: 300ms\n", "")); cfg.Broker.Limits.WriteTimeout != 300*time.Millisecond {
		t.Error(cfg.Broker.Limits.WriteTimeout)
	}
	if cfg := accepted(t, with("  limits:\n    write_timeout: none\n", "")); cfg.Broker.Limits.WriteTimeout != 0 {
		t.Error(cfg.Broker.Limits.WriteTimeout)
	}
}

func TestSQLiteCommitModes(t *testing.T) {
	cfg := accepted(t, sqlite("file_path: /x.db\n        publish_commit_interval: 2ms\n        publish_commit_max_records: 32"))
	p, _ := cfg.providerNamed("disk")
	if p.PublishCommit != CommitInterval || p.PublishCommitInterval != 2*time.Millisecond || p.PublishCommitMaxRecords != 32 || p.ReadConnections != 2 || p.FlushInterval != 150*time.Millisecond {
		t.Errorf("%+v", p)
	}
	cfg = accepted(t, sqlite("file_path: /x.db\n        publish_commit_interval: none"))
	if p, _ := cfg.providerNamed("disk"); p.PublishCommit != CommitEach {
		t.Errorf("%+v", p)
	}
	cfg = accepted(t, sqlite("file_path: /x.db\n        read_connections: 0"))
	if p, _ := cfg.providerNamed("disk"); p.PublishCommit != CommitCollect || p.ReadConnections != 0 {
		t.Errorf("%+v", p)
	}
}

func TestInertProviderIsANoteNotAFinding(t *testing.T) {
	cfg := accepted(t, sqlite("file_path: /x.db"))
	if len(cfg.Notes) != 1 || cfg.Notes[0].Key != "broker.storage.providers.disk" {
		t.Errorf("notes %v", cfg.Notes)
	}
}

func TestEveryFindingIsReportedNotOnlyTheFirst(t *testing.T) {
	_, err := parseYAML(t, with("  log_level: loud\n  limits:\n    max_topic_levels: 0\n    connect_timeout: none\n", "channels:\n  a/b:\n    type: stream\n"))
	if n := len(findings(t, err)); n < 4 {
		t.Errorf("%d findings, want at least 4:\n%v", n, err)
	}
	if !strings.HasPrefix(err.Error(), "configuration is invalid:\n") {
		t.Errorf("error text %q", err.Error())
	}
}

func TestYAMLThatDoesNotParseNamesTheLine(t *testing.T) {
	_, err := parseYAML(t, "broker:\n  id: [x\n")
	f := findings(t, err)
	if len(f) != 1 || f[0].Line != 2 || !strings.Contains(f[0].Message, "not valid YAML") {
		t.Errorf("%v", err)
	}
}

func TestAliasesThatMultiplyAreRefused(t *testing.T) {
	src := "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	for i, prev := range []string{"a", "b", "c", "d", "e", "f"} {
		name := string(rune('b' + i))
		src += name + ": &" + name + " [" + strings.Repeat("*"+prev+", ", 9) + "*" + prev + "]\n"
	}
	_, err := parseYAML(t, src)
	if err == nil || !strings.Contains(err.Error(), "aliases expand") {
		t.Errorf("%v", err)
	}
}

func TestAKeyWrittenTwiceIsRefused(t *testing.T) {
	_, err := parseYAML(t, minimal+"channels:\n  e:\n    type: append\n  e:\n    type: latest\n")
	if err == nil || !strings.Contains(err.Error(), "already defined") {
		t.Errorf("%v", err)
	}
}

func TestFindingsCarryLineAndColumn(t *testing.T) {
	_, err := parseYAML(t, with("  limits:\n    max_topic_levels: 0\n", ""))
	f := findings(t, err)
	if len(f) != 1 || f[0].Line != 12 || f[0].Column != 5 {
		t.Errorf("%+v", f)
	}
}

func TestOperationsListenNamingNoDoorIsRefusedWhateverElseIsWrong(t *testing.T) {
	refused(t, with("  log_level: loud\n  operations:\n    listen: {}\n", ""), "broker.operations.listen", 0, "opens nothing")
}
