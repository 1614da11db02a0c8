package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/saguin-edge/saguin/broker/acl"
	"github.com/saguin-edge/saguin/config"
)

func init() {
	registerMode("--acl", modeDoc{
		usage:   "--acl CONFIG [USER [CLIENT-ID]] [--json]",
		summary: "explain what a user may do under the configuration's acl_file (a list of users on standard input without USER)",
		flags:   []string{"--json"},
	}, runACL)
}

// aclInput is where the list form reads: standard input, which tests replace.
var aclInput io.Reader = os.Stdin

const aclUsage = "saguin --acl CONFIG [USER [CLIENT-ID]] [--json]"

// runACL is --acl CONFIG [USER [CLIENT-ID]] [--json] (RFC 0002 "Explaining a
// decision: --acl"). It takes the broker configuration rather than the
// acl_file, because that is where the file is named and the channels its
// rules are about are defined, and it answers with the grants the broker
// computes: the same package resolves both.
func runACL(args []string, stdout, stderr io.Writer) int {
	path, operands, asJSON, err := aclArgs(args)
	if err != nil {
		fmt.Fprintf(stderr, "saguin: %v\n", err)
		return 2
	}
	cfg, err := config.Parse(path)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	out := bufio.NewWriter(stdout)
	defer out.Flush()
	if cfg.Broker.MQTT.ACLFile == "" {
		if asJSON {
			io.WriteString(out, `{"acl_file":null,"everything_allowed":true}`+"\n")
		} else {
			fmt.Fprintf(out, "%s names no acl_file: every authenticated client may do anything.\n", cfg.File)
		}
		return 0
	}
	a, err := cfg.LoadACL()
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	bounds := acl.Bounds{PublishRate: int64(cfg.Broker.Limits.PublishRate), PublishBytes: cfg.Broker.Limits.PublishBytes}
	if len(operands) > 0 {
		user, clientID, hasID := operands[0], "", len(operands) == 2
		if hasID {
			clientID = operands[1]
		}
		g := a.Explain(user, clientID, hasID)
		if asJSON {
			g.WriteJSONObject(out, hasID)
		} else {
			g.WriteParagraph(out, hasID, bounds)
		}
		return 0
	}
	if !asJSON {
		io.WriteString(out, acl.ListHeader)
	}
	sc := bufio.NewScanner(aclInput)
	sc.Buffer(make([]byte, 0, 4096), maxRouteLine)
	for sc.Scan() {
		line := strings.TrimSpace(strings.TrimRight(sc.Text(), "\r"))
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		user, clientID, hasID := strings.Cut(line, "\t")
		if !hasID {
			user, clientID, hasID = strings.Cut(line, " ")
		}
		user, clientID = strings.TrimSpace(user), strings.TrimSpace(clientID)
		hasID = hasID && clientID != ""
		g := a.Explain(user, clientID, hasID)
		if asJSON {
			g.WriteJSONRows(out, user, bounds)
		} else {
			g.WriteRows(out, user, bounds)
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(stderr, "saguin: reading standard input: %v\n", err)
		return 1
	}
	return 0
}

// aclArgs accepts flags anywhere, after the operands too: the RFC's own
// example is saguin --acl examples/channels.yaml device-7 --json.
func aclArgs(args []string) (path string, operands []string, asJSON bool, err error) {
	found := false
	var ops []string
	for _, a := range args {
		name, value, hasValue := strings.Cut(a, "=")
		switch {
		case name == "--acl":
			if found {
				return "", nil, false, errors.New("--acl is given twice")
			}
			found = true
			if hasValue {
				ops = append(ops, value)
			}
		case name == "--json":
			if hasValue {
				return "", nil, false, errors.New("--json takes no value")
			}
			asJSON = true
		case strings.HasPrefix(a, "--"):
			return "", nil, false, fmt.Errorf("%s is not an argument of --acl: %s", a, aclUsage)
		default:
			ops = append(ops, a)
		}
	}
	if len(ops) < 1 || len(ops) > 3 {
		return "", nil, false, fmt.Errorf("--acl takes the configuration file, then a user name and a client id, or neither to read a list: %s", aclUsage)
	}
	return ops[0], ops[1:], asJSON, nil
}
