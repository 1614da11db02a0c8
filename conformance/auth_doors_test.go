package conformance

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/saguin-edge/saguin/codec"
)

// doorsBroker starts saguin with the password file written in its
// directory, the MQTT keys mqtt, and a tcp door plus a unix door whose
// extra keys are tcp and unix ($PW is the password file's path).
func doorsBroker(t *testing.T, mqtt, tcp, unix string) *brokerProc {
	t.Helper()
	saguinOnly(t, "the test needs a saguin started with its own doors")
	dir := t.TempDir()
	pw := writePasswd(t, dir, authUsers)
	sub := func(s string) string { return strings.ReplaceAll(s, "$PW", pw) }
	listen := "tcp:\n  address: 127.0.0.1:0\n" + sub(tcp) + "unix:\n  path: $DIR/mqtt.sock\n" + sub(unix)
	return startBrokerIn(t, dir, brokerConfig{MQTT: sub(mqtt), Listen: listen})
}

func (b *brokerProc) socket() string { return filepath.Join(b.dir, "mqtt.sock") }

// RFC 0002's own example: the fleet's door requires a password, the Unix
// socket its file permissions guard admits anonymous clients.
func TestADoorsAllowAnonymousWinsForThatDoor(t *testing.T) {
	b := doorsBroker(t, "password_file: $PW\nallow_anonymous: false", "", "  allow_anonymous: true\n")
	versions(t, func(t *testing.T, v byte) {
		if ack := dialRaw(t, b.addr, v).connect(clientID(t, "tcp-anon"), nil); ack.ReasonCode != refusedCode(v, codec.BadUserNameOrPassword, codec.ConnRefusedBadUserNamePassword) {
			t.Errorf("anonymous on the tcp door: 0x%02x", byte(ack.ReasonCode))
		}
		dialRawUnix(t, b.socket(), v).mustConnect(clientID(t, "unix-anon"), nil)
		// Named clients still authenticate on both.
		dialRaw(t, b.addr, v).mustConnect(clientID(t, "tcp-named"), login("device-7", "pw7"))
		if ack := dialRawUnix(t, b.socket(), v).connect(clientID(t, "unix-bad"), login("device-7", "bad")); ack.ReasonCode == codec.Success {
			t.Error("a wrong password admitted on the unix door")
		}
	})
}

// A door naming its own password_file admits its own users and does not
// inherit the broker-level allow_anonymous; the other door keeps it.
func TestADoorWithItsOwnPasswordFileDoesNotInheritAllowAnonymous(t *testing.T) {
	b := doorsBroker(t, "allow_anonymous: true", "  password_file: $PW\n", "")
	versions(t, func(t *testing.T, v byte) {
		if ack := dialRaw(t, b.addr, v).connect(clientID(t, "tcp-anon"), nil); ack.ReasonCode != refusedCode(v, codec.BadUserNameOrPassword, codec.ConnRefusedBadUserNamePassword) {
			t.Errorf("anonymous on the door with its own file: 0x%02x, want refused", byte(ack.ReasonCode))
		}
		dialRaw(t, b.addr, v).mustConnect(clientID(t, "tcp-named"), login("dashboard", "pwd"))
		dialRawUnix(t, b.socket(), v).mustConnect(clientID(t, "unix-anon"), nil)
		// Nothing checks a name on the unix door: a typed one is let in,
		// and is not an identity.
		dialRawUnix(t, b.socket(), v).mustConnect(clientID(t, "unix-typed"), login("device-7", "anything"))
	})
}

// allow_anonymous: true beside a password file is the migration's mixed
// mode: named clients authenticate, the rest are admitted.
func TestMixedModeAdmitsAnonymousAndChecksNamedClients(t *testing.T) {
	b := authBroker(t, "", "allow_anonymous: true")
	versions(t, func(t *testing.T, v byte) {
		dialRaw(t, b.addr, v).mustConnect(clientID(t, "anon"), nil)
		dialRaw(t, b.addr, v).mustConnect(clientID(t, "named"), login("device-7", "pw7"))
		if ack := dialRaw(t, b.addr, v).connect(clientID(t, "wrong"), login("device-7", "bad")); ack.ReasonCode != refusedCode(v, codec.BadUserNameOrPassword, codec.ConnRefusedBadUserNamePassword) {
			t.Errorf("a wrong password in mixed mode: 0x%02x", byte(ack.ReasonCode))
		}
	})
}

// A Will is asked again, as its arming client, when it fires: after a
// re-read taking its write away it is not published, and the log says so.
func TestWillReCheckedAsItsArmingClientWhenItFires(t *testing.T) {
	b := authBroker(t, authACL, "")
	watcher := dialRaw(t, b.addr, codec.Version5)
	watcher.mustConnect(clientID(t, "watch"), login("oncall", "pwo"))
	watcher.mustSubscribe(1, "iot/#", 0)
	id := clientID(t, "dying")
	dev := dialRaw(t, b.addr, codec.Version5)
	dev.mustConnect(id, both(login("device-7", "pw7"), func(p *codec.Connect) {
		p.WillFlag, p.WillTopic, p.WillPayload = true, []byte("iot/device-7/lwt"), []byte("gone")
	}))
	narrowed := strings.Replace(authACL, "    - topic: iot/%u/#\n      allow: [write, read]\n", "    - topic: iot/%u/#\n      allow: [read]\n", 1)
	os.WriteFile(filepath.Join(b.dir, "acl.yaml"), []byte(narrowed), 0o600)
	b.signal(syscall.SIGUSR1)
	if b.log.wait(regexp.MustCompile(`credentials re-read and in force`), waitLong) == "" {
		t.Fatal("the re-read never said it was in force")
	}
	dev.drop()
	if b.log.wait(regexp.MustCompile(`msg="Will not published" .*client_id=`+regexp.QuoteMeta(id)+`.*acl_file`), waitLong) == "" {
		t.Fatal("no line says the Will was not published for the acl_file")
	}
	watcher.expectNothing("a Will the acl_file no longer grants")
}

// persistent denied on 3.1.1: the session is made clean, so a reconnect
// finds none.
func TestPersistentDeniedMakesA311SessionClean(t *testing.T) {
	b := authBroker(t, authACL, "")
	id := clientID(t, "s311")
	c := dialRaw(t, b.addr, codec.Version311)
	c.mustConnect(id, both(login("sensor-1", "pws"), session(0)))
	c.mustSubscribe(1, "s/#", 1)
	c.disconnect()
	again := dialRaw(t, b.addr, codec.Version311)
	if ack := again.mustConnect(id, both(login("sensor-1", "pws"), session(0))); ack.SessionPresent {
		t.Error("a session outlived its connection for a client denied persistent")
	}
}
