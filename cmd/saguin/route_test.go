package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func withStdin(t *testing.T, s string) {
	t.Helper()
	saved := routeInput
	routeInput = strings.NewReader(s)
	t.Cleanup(func() { routeInput = saved })
}

// The list form RFC 0002 "Where a topic lands" runs against the configuration
// this repository ships.
func TestRouteListAnswersTheRFCExample(t *testing.T) {
	withStdin(t, "iot/depot/events/order-1\niot/depot/state/device-1\niot/depot/health/device-1\niot/depot/#\n")
	code, out, errs := run(t, "--route", exampleConfig)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	want := strings.Join([]string{
		"# topic-or-filter\tchannel\ttype\twhy",
		"iot/depot/events/order-1\tevents\tappend\tiot/+/events/+",
		"iot/depot/state/device-1\tstate\tlatest\tiot/+/state/+",
		"iot/depot/health/device-1\t-\tbroadcast\t-",
		"iot/depot/#\tevents\tappend\treplayed",
		"iot/depot/#\tpresence\tlatest\tcurrent",
		"iot/depot/#\tstate\tlatest\tcurrent",
		"iot/depot/#\tjobs\tqueue\texcluded",
		"iot/depot/#\tjobs__dlq\tappend\treplayed",
	}, "\n") + "\n"
	if out != want {
		t.Errorf("got:\n%s\nwant:\n%s", out, want)
	}
}

func TestRouteJSONAnswersTheRFCExample(t *testing.T) {
	withStdin(t, "iot/depot/state/device-1\niot/depot/health/device-1\n")
	code, out, _ := run(t, "--route", exampleConfig, "--json")
	want := `{"subject":"iot/depot/state/device-1","channel":"state","type":"latest","why":"iot/+/state/+"}
{"subject":"iot/depot/health/device-1","channel":null,"type":"broadcast","why":null}
`
	if code != 0 || out != want {
		t.Errorf("exit %d, got:\n%s\nwant:\n%s", code, out, want)
	}
}

func TestRouteListSkipsBlanksAndCommentsButAnswersALoneHash(t *testing.T) {
	withStdin(t, "# topic-or-filter\tchannel\n\n# a note\n#\n")
	_, out, _ := run(t, "--route", exampleConfig)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 6 || lines[1] != "#\tevents\tappend\treplayed" {
		t.Errorf("got:\n%s", out)
	}
}

func TestRouteKeptRunPipedBackAnswersTheSame(t *testing.T) {
	withStdin(t, "iot/depot/state/device-1\n")
	_, first, _ := run(t, "--route", exampleConfig)
	withStdin(t, first)
	_, second, _ := run(t, "--route", exampleConfig)
	if first != second {
		t.Errorf("first:\n%s\nsecond:\n%s", first, second)
	}
}

func TestRouteOperandPrintsTheRoutingTable(t *testing.T) {
	code, out, _ := run(t, "--route", exampleConfig, "iot/depot/state/device-1")
	if code != 0 || !strings.Contains(out, "iot/depot/state/device-1\tstate\tlatest\tiot/+/state/+") ||
		!strings.Contains(out, "iot/+/work/+/__dlq\tjobs__dlq\tappend") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

func TestRouteOperandJSONIsOneObjectWithTheRoutingTable(t *testing.T) {
	_, out, _ := run(t, "--route", exampleConfig, "iot/depot/#", "--json")
	var v struct {
		Subject string `json:"subject"`
		Answers []struct {
			Channel *string `json:"channel"`
			Why     *string `json:"why"`
		} `json:"answers"`
		RoutingTable []struct{ Filter, Channel, Type string } `json:"routing_table"`
	}
	if strings.Count(out, "\n") != 1 || json.Unmarshal([]byte(out), &v) != nil {
		t.Fatalf("not one JSON object: %s", out)
	}
	if v.Subject != "iot/depot/#" || len(v.Answers) != 5 || *v.Answers[3].Why != "excluded" || len(v.RoutingTable) != 5 {
		t.Errorf("%+v", v)
	}
}

func TestRouteRefusesAStringThatIsNeitherTopicNorFilter(t *testing.T) {
	code, out, _ := run(t, "--route", exampleConfig, "iot/#/x")
	if code == 0 || !strings.Contains(out, "not a topic or a filter") {
		t.Errorf("exit %d: %s", code, out)
	}
}

func TestRouteUsage(t *testing.T) {
	if code, _, _ := run(t, "--route"); code != 2 {
		t.Errorf("--route with nothing: exit %d", code)
	}
	if code, _, errs := run(t, "--route", exampleConfig, "--output"); code != 2 || !strings.Contains(errs, "--check-config") {
		t.Errorf("--route --output: exit %d %s", code, errs)
	}
	if code, _, _ := run(t, "--route", exampleConfig, "a", "b"); code != 2 {
		t.Errorf("two operands: exit %d", code)
	}
}

func TestRouteAnswersTheShippedTopicList(t *testing.T) {
	f, err := os.Open("../../examples/fleet-topics.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	saved := routeInput
	routeInput = f
	t.Cleanup(func() { routeInput = saved })
	code, out, _ := run(t, "--route", exampleConfig)
	if code != 0 || strings.Count(out, "\n") != 9 || !strings.Contains(out, "iot/depot/#\tjobs__dlq\tappend\treplayed") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}
