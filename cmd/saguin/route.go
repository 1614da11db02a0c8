package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/saguin-edge/saguin/codec/topic"
	"github.com/saguin-edge/saguin/config"
)

func init() {
	registerMode("--route", modeDoc{
		usage:   "--route CONFIG [TOPIC-OR-FILTER] [--json]",
		summary: "say which channel a topic lands in or a filter is served from; without one, answer a list on stdin",
		flags:   []string{"--json"},
	}, runRoute)
}

// routeInput is where the list form reads: standard input, which tests replace.
var routeInput io.Reader = os.Stdin

// maxRouteLine bounds one line of the list form.
const maxRouteLine = 64 << 10

// runRoute is --route CONFIG [TOPIC-OR-FILTER] [--json] (RFC 0002 "Where a topic
// lands"): a topic is answered with the channel holding it and the filter that
// claimed it, a filter with every channel it is served from and what each
// sends. With an operand the answer is followed by the routing table of
// expanded filters; without one, standard input is a list answered a line at
// a time. It answers with the routing table the broker routes with.
func runRoute(args []string, stdout, stderr io.Writer) int {
	path, subject, asJSON, err := routeArgs(args)
	if err != nil {
		fmt.Fprintf(stderr, "saguin: %v\n", err)
		return 2
	}
	cfg, err := config.Parse(path)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	routes := cfg.Routes()
	out := bufio.NewWriter(stdout)
	defer out.Flush()
	if subject != "" {
		rows, err := answer(routes, subject)
		if asJSON {
			writeJSONLine(out, operandObject(subject, rows, err, routes))
		} else {
			writeHeader(out)
			writeRows(out, subject, rows, err)
			fmt.Fprintln(out)
			fmt.Fprintln(out, "# routing table: every filter as expanded, and the channel holding it")
			for _, r := range routes.Expanded() {
				fmt.Fprintf(out, "%s\t%s\t%s\n", r.Filter, r.Channel.Name, r.Channel.Type)
			}
		}
		if err != nil {
			return 1
		}
		return 0
	}
	status := 0
	if !asJSON {
		writeHeader(out)
	}
	sc := bufio.NewScanner(routeInput)
	sc.Buffer(make([]byte, 0, 4096), maxRouteLine)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		subject, _, _ := strings.Cut(line, "\t")
		subject = strings.TrimSpace(subject)
		// A blank line is skipped and a # line is a comment - except a lone
		// #, the widest filter MQTT has.
		if subject == "" || strings.HasPrefix(subject, "#") && subject != "#" {
			continue
		}
		rows, err := answer(routes, subject)
		if err != nil {
			status = 1
		}
		if asJSON {
			for _, o := range lineObjects(subject, rows, err) {
				writeJSONLine(out, o)
			}
		} else {
			writeRows(out, subject, rows, err)
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(stderr, "saguin: reading standard input: %v\n", err)
		return 1
	}
	return status
}

func routeArgs(args []string) (path, subject string, asJSON bool, err error) {
	const usage = "saguin --route CONFIG [TOPIC-OR-FILTER] [--json]"
	var operands []string
	found := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, value, hasValue := strings.Cut(a, "=")
		switch {
		case name == "--route":
			if found {
				return "", "", false, errors.New("--route is given twice")
			}
			found = true
			if hasValue {
				operands = append(operands, value)
			}
		case name == "--json":
			if hasValue {
				return "", "", false, errors.New("--json takes no value")
			}
			asJSON = true
		case a == "--output":
			return "", "", false, errors.New("--output is for --check-config: saguin --check-config FILE --output")
		case strings.HasPrefix(a, "--"):
			return "", "", false, fmt.Errorf("%s is not an argument of --route%s: %s", a, didYouMean(name, []string{"--route", "--json"}), usage)
		default:
			operands = append(operands, a)
		}
	}
	switch len(operands) {
	case 1:
		return operands[0], "", asJSON, nil
	case 2:
		return operands[0], operands[1], asJSON, nil
	}
	return "", "", false, fmt.Errorf("--route takes the configuration file and at most one topic or filter: %s", usage)
}

// row is one line of an answer: a channel, or broadcast (Channel nil).
type row struct {
	channel *config.Channel
	why     string // the claiming filter for a topic, what is sent for a filter
}

// answer resolves a subject: a string holding + or # is a filter, anything else
// a topic name.
func answer(routes *config.Routes, subject string) ([]row, error) {
	if topic.IsWildcard(subject) {
		if err := topic.ValidateFilter(subject); err != nil {
			return nil, fmt.Errorf("not a topic or a filter: %v", err)
		}
		var rows []row
		for _, r := range routes.Filter(subject) {
			rows = append(rows, row{channel: r.Channel, why: r.Sends})
		}
		if len(rows) == 0 {
			rows = append(rows, row{})
		}
		return rows, nil
	}
	if err := topic.ValidateName(subject); err != nil {
		return nil, fmt.Errorf("not a topic or a filter: %v", err)
	}
	ch, filter, ok := routes.Topic(subject)
	if !ok {
		return []row{{}}, nil
	}
	return []row{{channel: ch, why: filter}}, nil
}

func writeHeader(w io.Writer) {
	fmt.Fprintln(w, "# topic-or-filter\tchannel\ttype\twhy")
}

func writeRows(w io.Writer, subject string, rows []row, err error) {
	if err != nil {
		fmt.Fprintf(w, "%s\t-\t-\t%v\n", subject, err)
		return
	}
	for _, r := range rows {
		if r.channel == nil {
			fmt.Fprintf(w, "%s\t-\tbroadcast\t-\n", subject)
			continue
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", subject, r.channel.Name, r.channel.Type, r.why)
	}
}

// routeLine is one answer as --json writes it: a - column is null.
type routeLine struct {
	Subject string  `json:"subject"`
	Channel *string `json:"channel"`
	Type    *string `json:"type"`
	Why     *string `json:"why"`
	Error   string  `json:"error,omitempty"`
}

func lineObjects(subject string, rows []row, err error) []routeLine {
	if err != nil {
		return []routeLine{{Subject: subject, Error: err.Error()}}
	}
	var out []routeLine
	for _, r := range rows {
		l := routeLine{Subject: subject}
		if r.channel == nil {
			broadcast := "broadcast"
			l.Type = &broadcast
		} else {
			name, typ, why := r.channel.Name, r.channel.Type, r.why
			l.Channel, l.Type, l.Why = &name, &typ, &why
		}
		out = append(out, l)
	}
	return out
}

type tableRow struct {
	Filter  string `json:"filter"`
	Channel string `json:"channel"`
	Type    string `json:"type"`
}

// operandObject is the one object an operand is answered with: the answers,
// each shaped as a list line is, and the routing table.
func operandObject(subject string, rows []row, err error, routes *config.Routes) any {
	obj := struct {
		Subject      string      `json:"subject"`
		Answers      []routeLine `json:"answers"`
		Error        string      `json:"error,omitempty"`
		RoutingTable []tableRow  `json:"routing_table"`
	}{Subject: subject, Answers: []routeLine{}, RoutingTable: []tableRow{}}
	if err != nil {
		obj.Error = err.Error()
	} else {
		obj.Answers = lineObjects(subject, rows, nil)
	}
	for _, r := range routes.Expanded() {
		obj.RoutingTable = append(obj.RoutingTable, tableRow{r.Filter, r.Channel.Name, r.Channel.Type})
	}
	return obj
}

func writeJSONLine(w io.Writer, v any) {
	b, _ := json.Marshal(v)
	w.Write(append(b, '\n'))
}
