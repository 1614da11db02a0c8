package auth

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// mosquittoPasswd writes a password file with Debian's mosquitto_passwd, so
// the hashes verified here are the ones a migrating deployment brings.
func mosquittoPasswd(t testing.TB, algo string, iterations string, user, password string) string {
	t.Helper()
	bin, err := exec.LookPath("mosquitto_passwd")
	if err != nil {
		t.Skip("mosquitto_passwd is not installed (scripts/install-test-deps.sh installs it)")
	}
	path := filepath.Join(t.TempDir(), "passwd")
	args := []string{"-H", algo}
	if iterations != "" {
		args = append(args, "-I", iterations)
	}
	args = append(args, "-c", "-b", path, user, password)
	if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
		t.Fatalf("mosquitto_passwd %v: %v: %s", args, err, out)
	}
	return path
}

func readEntries(t testing.TB, path string) []Entry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []Entry
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		user, hash, ok := strings.Cut(sc.Text(), ":")
		if ok {
			out = append(out, Entry{User: user, Hash: hash, Line: line})
		}
	}
	return out
}

func TestMosquittoHashesVerify(t *testing.T) {
	for _, tc := range []struct {
		name, algo, iterations, prefix string
	}{
		{"sha512", "sha512", "", "$6$"},
		{"pbkdf2 default count", "sha512-pbkdf2", "", "$7$101$"},
		{"pbkdf2 1000", "sha512-pbkdf2", "1000", "$7$1000$"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := mosquittoPasswd(t, tc.algo, tc.iterations, "alice@example.com", "s3cret pass")
			entries := readEntries(t, path)
			if len(entries) != 1 || !strings.HasPrefix(entries[0].Hash, tc.prefix) {
				t.Fatalf("mosquitto_passwd wrote %+v, want one %s hash", entries, tc.prefix)
			}
			u, err := NewUsers(path, entries)
			if err != nil {
				t.Fatal(err)
			}
			if got := u.Check("alice@example.com", []byte("s3cret pass")); got != OK {
				t.Errorf("right password: %v", got)
			}
			if got := u.Check("alice@example.com", []byte("s3cret pasS")); got != Wrong {
				t.Errorf("wrong password: %v", got)
			}
			if got := u.Check("alice@example.com", nil); got != Wrong {
				t.Errorf("no password: %v", got)
			}
			if got := u.Check("bob", []byte("s3cret pass")); got != Unknown {
				t.Errorf("unknown user: %v", got)
			}
			h, _ := ParseHash(entries[0].Hash)
			if h.String() != entries[0].Hash {
				t.Errorf("hash written back as %s, read %s", h, entries[0].Hash)
			}
		})
	}
}

func TestNewHashIsMosquittoSeven1000(t *testing.T) {
	h, err := New([]byte("pw"), Iterations)
	if err != nil {
		t.Fatal(err)
	}
	s := h.String()
	if !strings.HasPrefix(s, "$7$1000$") || len(h.Salt) != 12 {
		t.Fatalf("new hash %s: want $7$1000$ with a 12-byte salt", s)
	}
	back, err := ParseHash(s)
	if err != nil || !back.Verify([]byte("pw")) || back.Verify([]byte("pW")) {
		t.Fatalf("new hash does not verify its own password: %v", err)
	}
}

func TestArgon2AndUnknownHashesRefusedNamingFileAndLine(t *testing.T) {
	for _, hash := range []string{
		"$argon2id$v=19$m=65536,t=3,p=1$c2FsdA$aGFzaA",
		"$1$abc$def",
		"plaintext",
		"$7$0$FZnw7hPBFayrb8Vq$O8kw",
		"$6$!!!$abc",
	} {
		_, err := NewUsers("/etc/p", []Entry{{User: "a", Hash: "$6$8K5rmLkazON0wx5U$WLCPviYw71YYESV0bPvY7gekjwCGUGYFPix6I5kFsCYsKnktaCLZDyhlfFf6HghnT8iLHTIpPDG72XN2Viq31g==", Line: 1}, {User: "b", Hash: hash, Line: 2}})
		if err == nil || !strings.Contains(err.Error(), "/etc/p:2:") {
			t.Errorf("hash %q: err %v, want a refusal naming /etc/p:2", hash, err)
		}
	}
}

func TestUnknownUserCostsTheFilesCommonCount(t *testing.T) {
	h1, _ := New([]byte("x"), 101)
	h2, _ := New([]byte("y"), 101)
	h3, _ := New([]byte("z"), 1000)
	u, err := NewUsers("/p", []Entry{{"a", h1.String(), 1}, {"b", h2.String(), 2}, {"c", h3.String(), 3}})
	if err != nil {
		t.Fatal(err)
	}
	if u.dummy.Iterations != 101 {
		t.Errorf("dummy iterations %d, want the file's most common 101", u.dummy.Iterations)
	}
	six, _ := NewUsers("/p", []Entry{{"a", "$6$8K5rmLkazON0wx5U$WLCPviYw71YYESV0bPvY7gekjwCGUGYFPix6I5kFsCYsKnktaCLZDyhlfFf6HghnT8iLHTIpPDG72XN2Viq31g==", 1}})
	if six.dummy.Kind != SHA512 {
		t.Errorf("dummy on a $6$ file is %v, want $6$", six.dummy.Kind)
	}
	empty, _ := NewUsers("/p", nil)
	if empty.dummy.Iterations != Iterations {
		t.Errorf("dummy iterations on a file without $7$: %d, want %d", empty.dummy.Iterations, Iterations)
	}
}

// BenchmarkVerify is the cost of one CONNECT's check, known user against
// unknown side by side: the two must cost the same (a timing test as a
// benchmark, never a timed assertion).
func BenchmarkVerify(b *testing.B) {
	six, _ := ParseHash("$6$8K5rmLkazON0wx5U$WLCPviYw71YYESV0bPvY7gekjwCGUGYFPix6I5kFsCYsKnktaCLZDyhlfFf6HghnT8iLHTIpPDG72XN2Viq31g==")
	seven, _ := New([]byte("hunter2"), Iterations)
	u, _ := NewUsers("/p", []Entry{{"six", six.String(), 1}, {"seven", seven.String(), 2}})
	pw := []byte("hunter2")
	for _, c := range []struct{ name, user string }{
		{"sha512", "six"},
		{"pbkdf2-1000/known", "seven"},
		{"pbkdf2-1000/unknown", "nobody"},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				u.Check(c.user, pw)
			}
		})
	}
}

func FuzzParseHash(f *testing.F) {
	f.Add("$6$8K5rmLkazON0wx5U$WLCPviYw71YYESV0bPvY7gekjwCGUGYFPix6I5kFsCYsKnktaCLZDyhlfFf6HghnT8iLHTIpPDG72XN2Viq31g==")
	f.Add("$7$101$FZnw7hPBFayrb8Vq$O8kwzlrmDp7N6GNarEFPDk4/62XM4/zOx5HGzI2bts1mAdxr12AZg/P1QjVsI8sPj8hGE+p85m+is5lFt35PzA==")
	f.Add("$argon2id$v=19$x")
	f.Fuzz(func(t *testing.T, s string) {
		h, err := ParseHash(s)
		if err != nil {
			return
		}
		// What decodes writes back to a hash that decodes to the same thing.
		again, err := ParseHash(h.String())
		if err != nil || again.String() != h.String() {
			t.Fatalf("%q decoded, but %q does not read back: %v", s, h.String(), err)
		}
	})
}
