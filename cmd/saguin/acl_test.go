package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// aclConfig writes a configuration with the demo channels, a password file
// and examples/acl.yaml as its acl_file, and returns its path.
func aclConfig(t *testing.T, withACL bool) string {
	t.Helper()
	dir := t.TempDir()
	src, err := os.ReadFile(exampleConfig)
	if err != nil {
		t.Fatal(err)
	}
	aclSrc, err := os.ReadFile("../../examples/acl.yaml")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "acl.yaml"), aclSrc, 0o600)
	os.WriteFile(filepath.Join(dir, "clients.passwd"), []byte(""), 0o600)
	conf := string(src)
	if withACL {
		conf = strings.Replace(conf, "    listen:\n      tcp:\n        address: 127.0.0.1:1883\n",
			"    listen:\n      tcp:\n        address: 127.0.0.1:1883\n    password_file: "+filepath.Join(dir, "clients.passwd")+"\n    acl_file: "+filepath.Join(dir, "acl.yaml")+"\n", 1)
	}
	p := filepath.Join(dir, "saguin.yaml")
	os.WriteFile(p, []byte(conf), 0o600)
	return p
}

func withACLInput(t *testing.T, s string) {
	saved := aclInput
	aclInput = strings.NewReader(s)
	t.Cleanup(func() { aclInput = saved })
}

func TestACLListFormReadsStandardInput(t *testing.T) {
	conf := aclConfig(t, true)
	withACLInput(t, "# a comment\n\ndevice-7\tclient-1\nnobody\n")
	code, out, errs := run(t, "--acl", conf)
	if code != 0 {
		t.Fatal(errs)
	}
	want := "# user\trole\tkind\tsubject\tverbs\trate\tbytes\n" +
		"device-7\tdevice\ttopic\tiot/+/health/device-7\twrite,read\t200\t65536\n" +
		"nobody\t-\t-\t-\t-\tno bound\tno bound\n"
	if out != want {
		t.Errorf("got:\n%s\nwant:\n%s", out, want)
	}
}

func TestACLJSONAfterPositionals(t *testing.T) {
	conf := aclConfig(t, true)
	code, out, errs := run(t, "--acl", conf, "device-7", "--json")
	if code != 0 {
		t.Fatal(errs)
	}
	if !strings.HasPrefix(out, `{"user":"device-7","acl_file":"`) || !strings.Contains(out, `"pattern_applied":"device-7","patterns_matched":["device-*","device-7"]`) || strings.Count(out, "\n") != 1 {
		t.Errorf("%s", out)
	}
}

func TestACLWithoutACLFileIsOneSentence(t *testing.T) {
	conf := aclConfig(t, false)
	code, out, _ := run(t, "--acl", conf, "device-7")
	if code != 0 || out != conf+" names no acl_file: every authenticated client may do anything.\n" {
		t.Errorf("exit %d %q", code, out)
	}
	withACLInput(t, "a\nb\n")
	if _, out, _ := run(t, "--acl", conf); strings.Count(out, "\n") != 1 {
		t.Errorf("list form printed rows: %q", out)
	}
	if _, out, _ := run(t, "--acl", conf, "--json"); out != `{"acl_file":null,"everything_allowed":true}`+"\n" {
		t.Errorf("json %q", out)
	}
}

func TestACLParagraphForm(t *testing.T) {
	code, out, errs := run(t, "--acl", aclConfig(t, true), "device-7")
	if code != 0 || !strings.Contains(out, `entry in force: "device-7"`) || !strings.Contains(out, `shadows:`) {
		t.Errorf("exit %d %s %s", code, out, errs)
	}
}
