package conformance

import (
	"encoding/hex"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
)

// Tests for the rules of checklist-operations section A (authentication
// and saguin --passwd) that the audit of issue 14 found untested or tested
// in part; each is named after its rule.

// Checklist A1 (RFC 0002 "Who may connect"): password_file is an absolute
// path - a relative one, at broker.mqtt or on a door, is refused at start
// and by --check-config, naming the key.
func TestA1RelativePasswordFileIsRefused(t *testing.T) {
	saguinOnly(t, "the test starts saguin with its own configuration")
	for _, tc := range []struct {
		name string
		cfg  brokerConfig
		key  string
	}{
		{"broker.mqtt", brokerConfig{MQTT: "password_file: clients.passwd"}, `broker.mqtt.password_file "clients.passwd" is relative`},
		{"a door", brokerConfig{Listen: "tcp:\n  address: 127.0.0.1:0\n  password_file: ./clients.passwd"}, `broker.mqtt.listen.tcp.password_file "./clients.passwd" is relative`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			// The file exists where the relative path would find it from
			// dir: the refusal is of the spelling, not of a missing file.
			writePasswd(t, dir, authUsers)
			code, out := startFailing(t, tc.cfg, dir)
			if code == 0 || !strings.Contains(out, tc.key) || !strings.Contains(out, "absolute path") {
				t.Fatalf("start: exit %d, want non-zero naming %q and asking for an absolute path:\n%s", code, tc.key, out)
			}
			check := exec.Command(binPath, "--check-config", filepath.Join(dir, "saguin.yaml"))
			check.Dir = dir
			out2, err := check.CombinedOutput()
			if err == nil || !strings.Contains(string(out2), tc.key) {
				t.Fatalf("--check-config: %v, want a refusal naming %q:\n%s", err, tc.key, out2)
			}
		})
	}
}

// Checklist A10 (RFC 0002 "Who may connect"): which file a door reads is
// fixed at start. An edit pointing password_file at another file and a
// SIGUSR1 re-read the contents of the path the broker started with - its
// new users admitted - and never the new path, whose users stay refused;
// the broker says the edit is not applied.
func TestA10SIGUSR1DoesNotRePointAPasswordFile(t *testing.T) {
	b := authBroker(t, "", "")
	started := filepath.Join(b.dir, "clients.passwd")
	other := filepath.Join(b.dir, "other.passwd")
	if out, err := exec.Command("mosquitto_passwd", "-c", "-b", other, "elsewhere", "pwe").CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	if out, err := exec.Command("mosquitto_passwd", "-b", started, "device-9", "pw9").CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	cfg := filepath.Join(b.dir, "saguin.yaml")
	data, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	repointed := strings.Replace(string(data), "password_file: "+started, "password_file: "+other, 1)
	if repointed == string(data) {
		t.Fatalf("the configuration does not name %s:\n%s", started, data)
	}
	os.WriteFile(cfg, []byte(repointed), 0o600)
	seen := len(b.log.snapshot())
	b.signal(syscall.SIGUSR1)
	if b.log.waitFrom(seen, regexp.MustCompile(`credentials re-read and in force.*password_files="`+regexp.QuoteMeta(started)+` \(6 users\)"`), waitLong) == "" {
		t.Fatalf("the re-read does not say it read %s again with its six users:\n%s", started, b.log)
	}
	if b.log.waitFrom(seen, regexp.MustCompile(`SIGUSR1: not applied .*restart to apply them.*sections_edited=\S*listeners`), waitLong) == "" {
		t.Fatalf("no line says the re-pointed password_file waits for a restart:\n%s", b.log)
	}
	versions(t, func(t *testing.T, v byte) {
		if ack := dialRaw(t, b.addr, v).connect(clientID(t, "elsewhere"), login("elsewhere", "pwe")); ack.ReasonCode != refusedCode(v, codec.BadUserNameOrPassword, codec.ConnRefusedBadUserNamePassword) {
			t.Errorf("a user of the file the edit points at: CONNACK 0x%02x, want refused", byte(ack.ReasonCode))
		}
		dialRaw(t, b.addr, v).mustConnect(clientID(t, "added"), login("device-9", "pw9"))
		dialRaw(t, b.addr, v).mustConnect(clientID(t, "kept"), login("device-7", "pw7"))
	})
}

// Checklist A22 (RFC 0002 "Client certificates", "Every reason code"): a
// CONNECT user name holding U+0000 or a control character (C0, DEL, C1) is
// nobody's: 0x86 (3.1.1 0x04), and a warning says why.
func TestA22ControlCharacterInAUserNameIsRefusedWithAWarning(t *testing.T) {
	b := authBroker(t, "", "allow_anonymous: true")
	versions(t, func(t *testing.T, v byte) {
		for _, tc := range []struct{ name, user, why string }{
			{"U+0000", "device\x007", "user name holds U+0000"},
			{"U+0001", "device\x017", "user name holds a control character (U+0001-U+001F, U+007F-U+009F)"},
			{"U+007F", "device-7\x7f", "user name holds a control character (U+0001-U+001F, U+007F-U+009F)"},
			{"U+0085", "device-7\u0085", "user name holds a control character (U+0001-U+001F, U+007F-U+009F)"},
		} {
			id := clientID(t, "ctl-"+strings.TrimPrefix(tc.name, "U+"))
			// The password is right for device-7: it is the name that is
			// refused, and in mixed mode - where a client offering no name
			// is admitted - it is not taken for no name either.
			// The line is the refused socket's (its client id is not
			// taken up), so it is looked for after this case began.
			seen := len(b.log.snapshot())
			ack := dialRaw(t, b.addr, v).connect(id, login(tc.user, "pw7"))
			want := refusedCode(v, codec.BadUserNameOrPassword, codec.ConnRefusedBadUserNamePassword)
			if ack.ReasonCode != want {
				t.Errorf("%s: CONNACK 0x%02x, want 0x%02x", tc.name, byte(ack.ReasonCode), byte(want))
			}
			line := regexp.MustCompile(`level=WARN msg="connection refused" .*code=0x` + strings.ToUpper(hex.EncodeToString([]byte{byte(want)})) + ` why="` + regexp.QuoteMeta(tc.why) + `"`)
			if b.log.waitFrom(seen, line, waitLong) == "" {
				t.Errorf("%s: no warning saying %q:\n%s", tc.name, tc.why, b.log)
			}
		}
	})
}

// Checklist A26 (RFC 0002 "Every reason code, in one place", "A DISCONNECT
// from the broker"): Sagüin runs no enhanced authentication - a CONNECT
// naming an Authentication Method is 0x8C, and an AUTH packet after a
// CONNECT is DISCONNECT 0x82 Protocol error; in 3.1.1 the packet type is
// reserved and the connection is closed.
func TestA26AuthAfterConnectIsProtocolError(t *testing.T) {
	b := authBroker(t, "", "")
	method := func(c *codec.Connect) {
		c.Properties.AuthMethod = []byte("SCRAM-SHA-256")
		c.Properties.Present.Set(codec.PropAuthMethod)
	}
	if ack := dialRaw(t, b.addr, codec.Version5).connect(clientID(t, "method"), both(login("device-7", "pw7"), method)); ack.ReasonCode != codec.BadAuthenticationMethod {
		t.Fatalf("CONNECT naming an Authentication Method: CONNACK 0x%02x, want 0x8C", byte(ack.ReasonCode))
	}
	for _, tc := range []struct {
		name string
		auth codec.Auth
	}{
		{"bare AUTH", codec.Auth{}},
		{"re-authenticate", func() codec.Auth {
			a := codec.Auth{ReasonCode: codec.ReAuthenticate}
			a.Properties.AuthMethod = []byte("SCRAM-SHA-256")
			a.Properties.Present.Set(codec.PropAuthMethod)
			return a
		}()},
	} {
		c := dialRaw(t, b.addr, codec.Version5)
		c.mustConnect(clientID(t, "auth"), login("device-7", "pw7"))
		c.send(tc.auth.Append(nil, codec.Version5))
		c.expectDisconnect(codec.ProtocolError)
	}
	c := dialRaw(t, b.addr, codec.Version311)
	c.mustConnect(clientID(t, "auth311"), login("device-7", "pw7"))
	c.send((&codec.Auth{}).Append(nil, codec.Version5))
	c.expectClosedSilently()
}

// Checklist A31 (RFC 0002 "What a client may do"): the identity of a client
// nothing authenticated is the empty string, whatever user name it typed.
// On a door without a password file beside an acl_file, a client typing
// device-7 is matched by "*" - which matches the empty name - and is never
// given device-7's entry; on the door that checks the name it is.
func TestA31ANameNothingCheckedIsNotAnIdentity(t *testing.T) {
	saguinOnly(t, "the test needs a saguin started with its own doors")
	dir := t.TempDir()
	pw := writePasswd(t, dir, authUsers)
	acl := `roles:
  device:
    - topic: iot/%u/#
      allow: [write]
  anyone:
    - topic: open/#
      allow: [write]
users:
  "device-*": [device]
  "*": [anyone]
`
	os.WriteFile(filepath.Join(dir, "acl.yaml"), []byte(acl), 0o600)
	listen := "tcp:\n  address: 127.0.0.1:0\n  password_file: " + pw + "\nunix:\n  path: $DIR/mqtt.sock\n"
	b := startBrokerIn(t, dir, brokerConfig{MQTT: "acl_file: " + filepath.Join(dir, "acl.yaml"), Listen: listen})
	versions(t, func(t *testing.T, v byte) {
		publishes := func(c *raw, topic string, id uint16) bool {
			t.Helper()
			c.publish(topic, []byte("x"), 1, id)
			if v == codec.Version5 {
				return c.expectPuback(id) == codec.Success
			}
			h, _, err := c.next(waitLong)
			return err == nil && h.Type == codec.TypePuback
		}
		typed := dialRawUnix(t, b.socket(), v)
		typed.mustConnect(clientID(t, "typed"), login("device-7", "not-checked"))
		if !publishes(typed, "open/x", 1) {
			t.Fatal("a client nothing authenticated is not granted what * grants")
		}
		if publishes(typed, "iot/device-7/x", 2) {
			t.Fatal("a user name typed on a door that checks none was taken as the identity device-7")
		}
		proved := dialRaw(t, b.addr, v)
		proved.mustConnect(clientID(t, "proved"), login("device-7", "pw7"))
		if !publishes(proved, "iot/device-7/x", 1) {
			t.Fatal("device-7 proved by its password is not granted its own topics")
		}
	})
}

// Checklist A35 (RFC 0002 "How fast connections are accepted"):
// limits.max_connect_rate paces the MQTT doors - connections over the rate
// wait and are admitted, never refused - and not the operations listener:
// twenty requests, each on a new connection, are all answered while MQTT
// connections paced at one a second are still waiting their turn.
func TestA35OperationsListenerIsNotPacedByMaxConnectRate(t *testing.T) {
	ob := startOps(t, t.TempDir(), opsTCP, brokerConfig{Limits: "max_connect_rate: 1"})
	// Rate 1 with bursts of 2: the eighth connection is accepted about six
	// seconds after the first.
	conns := make([]*raw, 8)
	for i := range conns {
		conns[i] = dialRaw(t, ob.addr, codec.Version5)
		conns[i].send(conns[i].connectPacket(clientID(t, "paced"), nil))
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for i := 0; i < 20; i++ {
		req, _ := http.NewRequest("GET", "http://"+ob.ops+"/health", nil)
		if resp, _ := do(t, client, req); resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: %d", i, resp.StatusCode)
		}
	}
	last := conns[len(conns)-1]
	if _, _, err := last.next(10 * time.Millisecond); err == nil {
		t.Fatal("the last paced MQTT connection was answered before twenty operations requests were: the operations listener waited with it")
	} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("the last paced MQTT connection: %v", err)
	}
	for i, c := range conns {
		if ack := c.connack(); ack.ReasonCode != codec.Success {
			t.Fatalf("paced connection %d: CONNACK 0x%02x, want admitted", i, byte(ack.ReasonCode))
		}
	}
}

// Checklist A41 (RFC 0002 "Withdrawing a device's access"): a SIGUSR1 that
// applies logs the paths it re-read and what they hold now - the password
// file's users, the acl_file's roles - counted from the files as edited.
func TestA41SIGUSR1LogsThePathsAndWhatTheyHold(t *testing.T) {
	b := authBroker(t, authACL, "")
	pw := filepath.Join(b.dir, "clients.passwd")
	aclPath := filepath.Join(b.dir, "acl.yaml")
	for _, u := range []string{"device-8", "device-9"} {
		if out, err := exec.Command("mosquitto_passwd", "-b", pw, u, "pw").CombinedOutput(); err != nil {
			t.Fatalf("%v %s", err, out)
		}
	}
	grown := strings.Replace(authACL, "users:\n", "  extra:\n    - topic: x/#\n      allow: [read]\nusers:\n", 1) + "  extra-user: [extra]\n"
	os.WriteFile(aclPath, []byte(grown), 0o600)
	b.signal(syscall.SIGUSR1)
	want := regexp.MustCompile(`msg="SIGUSR1: credentials re-read and in force" .*password_files="` + regexp.QuoteMeta(pw) +
		` \(7 users\)" acl_file=` + regexp.QuoteMeta(aclPath) + ` roles=6 entries=6`)
	if b.log.wait(want, waitLong) == "" {
		t.Fatalf("no line of the re-read says %s holds 7 users and %s 6 roles:\n%s", pw, aclPath, b.log)
	}
}

// Checklist A47 (RFC 0005 "Which routes a credential reaches"): saguin
// --passwd scope sets the whole route list - a second scope replaces the
// first rather than adding to it - and all removes the field, so the line
// is Mosquitto's user:hash again; the hash is never touched.
func TestA47PasswdScopeSetsTheWholeList(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "ops.passwd")
	if _, errs, code := runCLI(t, "--passwd", "add", file, "op", "secret"); code != 0 {
		t.Fatalf("add: exit %d: %s", code, errs)
	}
	line := func() (user, hash, scope string, fields int) {
		t.Helper()
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Split(strings.TrimSpace(string(data)), ":")
		f = append(f, "", "")
		return f[0], f[1], f[2], len(f) - 2
	}
	_, hash, _, _ := line()
	for _, tc := range []struct {
		routes    string
		wantScope string
		fields    int
	}{
		{"/metrics,/v1/operations", "/metrics,/v1/operations", 3},
		{"/v1/operations/sessions", "/v1/operations/sessions", 3},
		{"all", "", 2},
	} {
		if _, errs, code := runCLI(t, "--passwd", "scope", file, "op", tc.routes); code != 0 {
			t.Fatalf("scope %s: exit %d: %s", tc.routes, code, errs)
		}
		user, h, scope, fields := line()
		if user != "op" || h != hash || scope != tc.wantScope || fields != tc.fields {
			t.Fatalf("after scope %s: user %q, hash changed %v, scope %q in %d fields; want scope %q in %d", tc.routes, user, h != hash, scope, fields, tc.wantScope, tc.fields)
		}
	}
}

// doorFileBroker starts saguin with broker.mqtt's password file holding
// authUsers on the tcp door and a unix door naming its own password_file,
// door.passwd, holding door-a alone. It returns the door file's path.
func doorFileBroker(t *testing.T) (*brokerProc, string) {
	t.Helper()
	saguinOnly(t, "the test needs a saguin started with its own doors")
	dir := t.TempDir()
	pw := writePasswd(t, dir, authUsers)
	door := filepath.Join(dir, "door.passwd")
	if out, err := exec.Command("mosquitto_passwd", "-c", "-b", door, "door-a", "pwa").CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	listen := "tcp:\n  address: 127.0.0.1:0\nunix:\n  path: $DIR/mqtt.sock\n  password_file: " + door + "\n"
	return startBrokerIn(t, dir, brokerConfig{MQTT: "password_file: " + pw, Listen: listen}), door
}

// Checklist A38 (RFC 0002 "Who may connect"): SIGUSR1 re-reads a door's
// own password_file, not only broker.mqtt's - a user added to it is refused
// on that door before the signal and admitted after it.
func TestA38SIGUSR1ReReadsADoorsOwnPasswordFile(t *testing.T) {
	b, door := doorFileBroker(t)
	if out, err := exec.Command("mosquitto_passwd", "-b", door, "door-b", "pwb").CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	if ack := dialRawUnix(t, b.socket(), codec.Version5).connect(clientID(t, "early"), login("door-b", "pwb")); ack.ReasonCode != codec.BadUserNameOrPassword {
		t.Fatalf("a user added to the door's file before the signal: CONNACK 0x%02x, want 0x86", byte(ack.ReasonCode))
	}
	seen := len(b.log.snapshot())
	b.signal(syscall.SIGUSR1)
	if b.log.waitFrom(seen, regexp.MustCompile(`credentials re-read and in force.*`+regexp.QuoteMeta(door)+` \(2 users\)`), waitLong) == "" {
		t.Fatalf("the re-read does not say it read %s with its two users:\n%s", door, b.log)
	}
	versions(t, func(t *testing.T, v byte) {
		dialRawUnix(t, b.socket(), v).mustConnect(clientID(t, "added"), login("door-b", "pwb"))
		dialRawUnix(t, b.socket(), v).mustConnect(clientID(t, "kept"), login("door-a", "pwa"))
	})
}

// Checklist A40 (RFC 0002 "Who may connect"): a re-read is all or nothing -
// one password file that cannot be read (mode 000; as root, which reads
// through that, a directory put in the file's place) is named at error,
// and every door keeps the users it had: nothing re-read is applied, not
// even the other file's added user.
func TestA40UnreadablePasswordFileKeepsTheOldUsers(t *testing.T) {
	b, door := doorFileBroker(t)
	pw := filepath.Join(b.dir, "clients.passwd")
	if out, err := exec.Command("mosquitto_passwd", "-b", pw, "device-9", "pw9").CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	if err := os.Chmod(door, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := os.ReadFile(door); err == nil {
		// Mode 000 does not stop root: a directory cannot be read as a file.
		if err := os.Remove(door); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(door, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	seen := len(b.log.snapshot())
	b.signal(syscall.SIGUSR1)
	if b.log.waitFrom(seen, regexp.MustCompile(`level=ERROR.*SIGUSR1.*`+regexp.QuoteMeta(door)), waitLong) == "" {
		t.Fatalf("no error line of the re-read names %s:\n%s", door, b.log)
	}
	versions(t, func(t *testing.T, v byte) {
		dialRawUnix(t, b.socket(), v).mustConnect(clientID(t, "door-kept"), login("door-a", "pwa"))
		dialRaw(t, b.addr, v).mustConnect(clientID(t, "kept"), login("device-7", "pw7"))
		if ack := dialRaw(t, b.addr, v).connect(clientID(t, "added"), login("device-9", "pw9")); ack.ReasonCode != refusedCode(v, codec.BadUserNameOrPassword, codec.ConnRefusedBadUserNamePassword) {
			t.Errorf("a user added to the readable file was admitted: CONNACK 0x%02x, want refused (nothing applied)", byte(ack.ReasonCode))
		}
	})
}

// Checklist A40 (RFC 0002 "Who may connect"): a re-read is all or nothing -
// a door's own password file emptied, so that it names nobody on a door
// admitting nobody else (no anonymous clients, no certificates), is named
// at error, and every door keeps the users it had: not even the other
// file's added user is applied.
func TestA40EmptiedDoorPasswordFileKeepsTheOldUsers(t *testing.T) {
	b, door := doorFileBroker(t)
	pw := filepath.Join(b.dir, "clients.passwd")
	if out, err := exec.Command("mosquitto_passwd", "-b", pw, "device-9", "pw9").CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	if err := os.WriteFile(door, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	seen := len(b.log.snapshot())
	b.signal(syscall.SIGUSR1)
	if b.log.waitFrom(seen, regexp.MustCompile(`level=ERROR.*SIGUSR1.*`+regexp.QuoteMeta(door)+`.*names no users`), waitLong) == "" {
		t.Fatalf("no error line of the re-read names %s as naming nobody:\n%s", door, b.log)
	}
	versions(t, func(t *testing.T, v byte) {
		dialRawUnix(t, b.socket(), v).mustConnect(clientID(t, "door-kept"), login("door-a", "pwa"))
		dialRaw(t, b.addr, v).mustConnect(clientID(t, "kept"), login("device-7", "pw7"))
		if ack := dialRaw(t, b.addr, v).connect(clientID(t, "added"), login("device-9", "pw9")); ack.ReasonCode != refusedCode(v, codec.BadUserNameOrPassword, codec.ConnRefusedBadUserNamePassword) {
			t.Errorf("a user added to the other file was admitted: CONNACK 0x%02x, want refused (nothing applied)", byte(ack.ReasonCode))
		}
	})
}

// Checklist A38 (RFC 0005 "The operations listener"): SIGUSR1 re-reads an
// operations door's own password_file, not only the block's - a user added
// to it is answered 401 before the signal and 200 after it, and the user it
// held still reads.
func TestA38SIGUSR1ReReadsAnOperationsDoorsOwnPasswordFile(t *testing.T) {
	saguinOnly(t, "the test needs a saguin started with its own operations door")
	dir := t.TempDir()
	door := filepath.Join(dir, "door.passwd")
	passwordFile(t, door, [3]string{"alice", "alice-secret", ""})
	ob := startOps(t, dir, opsTCP+"\n    password_file: "+door, brokerConfig{})
	if resp, _ := ob.get(t, "GET", "/metrics", basic("alice", "alice-secret")...); resp.StatusCode != 200 {
		t.Fatalf("alice before the signal: %d, want 200", resp.StatusCode)
	}
	passwordFile(t, door, [3]string{"alice", "alice-secret", ""}, [3]string{"bob", "bob-secret", ""})
	if resp, _ := ob.get(t, "GET", "/metrics", basic("bob", "bob-secret")...); resp.StatusCode != 401 {
		t.Fatalf("a user added to the door's file before the signal: %d, want 401", resp.StatusCode)
	}
	seen := len(ob.log.snapshot())
	ob.signal(syscall.SIGUSR1)
	if ob.log.waitFrom(seen, regexp.MustCompile(`SIGUSR1: credentials re-read and in force`), waitLong) == "" {
		t.Fatalf("the re-read was not applied:\n%s", ob.log)
	}
	for _, who := range [][]string{basic("bob", "bob-secret"), basic("alice", "alice-secret")} {
		if resp, _ := ob.get(t, "GET", "/metrics", who...); resp.StatusCode != 200 {
			t.Errorf("%v after the signal: %d, want 200", who, resp.StatusCode)
		}
	}
}

// Checklist A51 (RFC 0002 "Validation"): an existing password file keeps
// its owner, as well as its mode, through saguin --passwd add, scope and
// delete - the file is written anew and put in the old one's place, so the
// owner is the one thing a writer running as root would otherwise change.
func TestA51PasswdKeepsAnExistingFilesOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a file to another owner needs root")
	}
	file := filepath.Join(t.TempDir(), "clients.passwd")
	if _, errs, code := runCLI(t, "--passwd", "add", file, "first", "secret"); code != 0 {
		t.Fatalf("add to a new file: exit %d: %s", code, errs)
	}
	const uid, gid = 4242, 4343
	if err := os.Chown(file, uid, gid); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(file, 0o640); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"add", file, "second", "secret"},
		{"scope", file, "second", "/metrics"},
		{"delete", file, "first"},
	} {
		if _, errs, code := runCLI(t, append([]string{"--passwd"}, args...)...); code != 0 {
			t.Fatalf("%s: exit %d: %s", args[0], code, errs)
		}
		st, err := os.Stat(file)
		if err != nil {
			t.Fatal(err)
		}
		sys := st.Sys().(*syscall.Stat_t)
		if sys.Uid != uid || sys.Gid != gid || st.Mode().Perm() != 0o640 {
			t.Errorf("after %s: owner %d:%d mode %v, want %d:%d 0640", args[0], sys.Uid, sys.Gid, st.Mode().Perm(), uid, gid)
		}
	}
}
