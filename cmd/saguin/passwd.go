package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/saguin-edge/saguin/broker/auth"
	"github.com/saguin-edge/saguin/config"
)

func init() {
	registerMode("--passwd", modeDoc{
		usage:   "--passwd list|add|delete|scope FILE [USER [PASSWORD|ROUTES|all]]",
		summary: "manage a password file in Mosquitto's format ($7$, 1000 iterations), consulting no configuration",
	}, runPasswd)
}

// passwdInput is where a prompted password is read: the terminal on standard
// input, which tests replace with a pty.
var passwdInput = os.Stdin

const passwdUsage = "saguin --passwd list FILE | add FILE USER [PASSWORD] | delete FILE USER | scope FILE USER ROUTES|all"

// runPasswd is --passwd (RFC 0002 "Validation", RFC 0005 "Which routes a
// credential reaches"): it manages one password file in Mosquitto's format and
// exits, consulting no configuration, so it works before a broker exists and
// while its configuration is broken. The broker answers from the copy it
// holds: nothing written here admits anybody until SIGUSR1.
func runPasswd(args []string, stdout, stderr io.Writer) int {
	var ops []string
	for _, a := range args {
		name, _, _ := strings.Cut(a, "=")
		switch {
		case name == "--passwd":
		case name == "--config":
			fmt.Fprintln(stderr, "saguin: --passwd consults no configuration: it manages the file it is given, so that it works while a broker's configuration is broken; give the file instead of --config")
			return 2
		case strings.HasPrefix(a, "--"):
			fmt.Fprintf(stderr, "saguin: %s is not an argument of --passwd: %s\n", a, passwdUsage)
			return 2
		default:
			ops = append(ops, a)
		}
	}
	if len(ops) < 2 {
		fmt.Fprintf(stderr, "saguin: %s\n", passwdUsage)
		return 2
	}
	verb, path, rest := ops[0], ops[1], ops[2:]
	var err error
	switch {
	case verb == "list" && len(rest) == 0:
		err = passwdList(path, stdout)
	case verb == "add" && (len(rest) == 1 || len(rest) == 2):
		err = passwdAdd(path, rest, stderr)
	case verb == "delete" && len(rest) == 1:
		err = passwdEdit(path, rest[0], func(l *pwLine) (*pwLine, error) {
			if l == nil {
				return nil, fmt.Errorf("%s names no user %q; nothing was changed", path, rest[0])
			}
			return nil, nil
		})
	case verb == "scope" && len(rest) == 2:
		err = passwdScope(path, rest[0], rest[1])
	default:
		fmt.Fprintf(stderr, "saguin: %s\n", passwdUsage)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "saguin: %v\n", err)
		return 1
	}
	return 0
}

// pwLine is one line of the file: a user line (User set) or anything else,
// kept as written.
type pwLine struct {
	text  string
	User  string
	Hash  string
	Scope string // the third field, "" when absent
}

func (l *pwLine) String() string {
	if l.User == "" {
		return l.text
	}
	s := l.User + ":" + l.Hash
	if l.Scope != "" {
		s += ":" + l.Scope
	}
	return s
}

func readPwLines(path string) ([]*pwLine, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []*pwLine
	for _, text := range strings.SplitAfter(string(data), "\n") {
		if text == "" {
			continue
		}
		text = strings.TrimRight(text, "\r\n")
		l := &pwLine{text: text}
		if strings.TrimSpace(text) != "" && !strings.HasPrefix(text, "#") {
			f := strings.SplitN(text, ":", 3)
			l.User = f[0]
			if len(f) > 1 {
				l.Hash = f[1]
			}
			if len(f) > 2 {
				l.Scope = f[2]
			}
		}
		out = append(out, l)
	}
	return out, nil
}

// passwdList prints one user a line, the routes a scoped operations user
// reaches after a tab: a hashed file cannot be read by eye.
func passwdList(path string, stdout io.Writer) error {
	lines, err := readPwLines(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(stdout)
	for _, l := range lines {
		switch {
		case l.User == "":
		case l.Scope != "":
			fmt.Fprintf(w, "%s\t%s\n", l.User, l.Scope)
		default:
			fmt.Fprintln(w, l.User)
		}
	}
	return w.Flush()
}

// validUser refuses what the broker would refuse: a colon ends the name in
// the file, a name starting with # would be read as a comment, and a control
// character makes a name nobody's (RFC 0002 "Client certificates").
func validUser(u string) error {
	switch {
	case u == "":
		return errors.New("a user name may not be empty")
	case strings.Contains(u, ":"):
		return fmt.Errorf("user name %q holds a colon, which ends a name in the file", u)
	case strings.HasPrefix(u, "#"):
		return fmt.Errorf("user name %q starts with #, which the file reads as a comment", u)
	case !utf8.ValidString(u):
		return fmt.Errorf("user name %q is not UTF-8", u)
	}
	for _, r := range u {
		if r < 0x20 || r >= 0x7f && r <= 0x9f {
			return fmt.Errorf("user name %q holds a control character, which makes a name nobody's: the broker refuses it at CONNECT", u)
		}
	}
	return nil
}

func passwdAdd(path string, rest []string, stderr io.Writer) error {
	user := rest[0]
	if err := validUser(user); err != nil {
		return err
	}
	var password []byte
	if len(rest) == 2 {
		password = []byte(rest[1])
	} else {
		var err error
		if password, err = promptTwice(passwdInput, stderr); err != nil {
			return err
		}
	}
	h, err := auth.New(password, auth.Iterations)
	if err != nil {
		return err
	}
	return passwdEdit(path, user, func(l *pwLine) (*pwLine, error) {
		if l == nil {
			return &pwLine{User: user, Hash: h.String()}, nil
		}
		// A new password keeps the routes the user reaches.
		l.Hash = h.String()
		return l, nil
	})
}

func passwdScope(path, user, routes string) error {
	scope := ""
	if routes != "all" {
		for _, r := range strings.Split(routes, ",") {
			if !config.ServedRoute(r) {
				return fmt.Errorf("%q names no route the operations listener serves (%s)", r, strings.Join(config.OperationsRoutes, ", "))
			}
		}
		scope = routes
	}
	return passwdEdit(path, user, func(l *pwLine) (*pwLine, error) {
		if l == nil {
			return nil, fmt.Errorf("%s names no user %q; add the user first", path, user)
		}
		l.Scope = scope // the whole list, never added to
		return l, nil
	})
}

// passwdEdit rewrites the file with user's line replaced by what edit returns
// (nil removes it; a new line goes at the end). A missing file is created for
// an add only, mode 0600; an existing one keeps its mode and owner. The new
// content is written beside it and renamed over it, so a broker re-reading on
// SIGUSR1 meanwhile reads the old file or the new one, never half of one.
func passwdEdit(path, user string, edit func(*pwLine) (*pwLine, error)) error {
	lines, err := readPwLines(path)
	mode, uid, gid := fs.FileMode(0o600), -1, -1
	missing := errors.Is(err, fs.ErrNotExist)
	switch {
	case missing:
	case err != nil:
		return err
	default:
		st, err := os.Stat(path)
		if err != nil {
			return err
		}
		mode = st.Mode().Perm()
		if sys, ok := st.Sys().(*syscall.Stat_t); ok {
			uid, gid = int(sys.Uid), int(sys.Gid)
		}
	}
	var at *pwLine
	idx := -1
	for i, l := range lines {
		if l.User == user {
			at, idx = l, i
			break
		}
	}
	repl, err := edit(at)
	if err != nil {
		return err
	}
	if missing && repl == nil {
		return fmt.Errorf("%s does not exist", path)
	}
	switch {
	case idx >= 0 && repl == nil:
		lines = append(lines[:idx], lines[idx+1:]...)
	case idx >= 0:
		lines[idx] = repl
	case repl != nil:
		lines = append(lines, repl)
	}
	var buf bytes.Buffer
	for _, l := range lines {
		buf.WriteString(l.String())
		buf.WriteByte('\n')
	}
	return replaceFile(path, buf.Bytes(), mode, uid, gid)
}

func replaceFile(path string, data []byte, mode fs.FileMode, uid, gid int) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if uid >= 0 && (uid != os.Getuid() || gid != os.Getgid()) {
		if err := tmp.Chown(uid, gid); err != nil {
			tmp.Close()
			return fmt.Errorf("writing %s: keeping its owner %d:%d: %w", path, uid, gid, err)
		}
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// promptTwice reads a password twice from the terminal with echo off. Without
// a terminal it refuses rather than read a password piped in with no prompt
// seen: the password can be given as the last operand instead.
func promptTwice(tty *os.File, stderr io.Writer) ([]byte, error) {
	fd := int(tty.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, errors.New("no terminal to prompt on: give the password as the last operand, saguin --passwd add FILE USER PASSWORD")
	}
	quiet := *old
	quiet.Lflag &^= unix.ECHO
	quiet.Lflag |= unix.ICANON | unix.ECHONL
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &quiet); err != nil {
		return nil, fmt.Errorf("turning the terminal's echo off: %w", err)
	}
	defer unix.IoctlSetTermios(fd, unix.TCSETS, old)
	r := bufio.NewReader(tty)
	read := func(prompt string) ([]byte, error) {
		io.WriteString(stderr, prompt)
		line, err := r.ReadBytes('\n')
		if err != nil {
			return nil, fmt.Errorf("reading the password: %w", err)
		}
		return bytes.TrimRight(line, "\r\n"), nil
	}
	first, err := read("Password: ")
	if err != nil {
		return nil, err
	}
	second, err := read("Reenter password: ")
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(first, second) {
		return nil, errors.New("the two passwords differ; nothing was changed")
	}
	if len(first) == 0 {
		return nil, errors.New("an empty password admits whoever tries it; nothing was changed")
	}
	return first, nil
}
