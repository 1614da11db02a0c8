package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/bench/scenario"
)

func TestNumberKeepsThreeSignificantDigits(t *testing.T) {
	for _, c := range []struct {
		in   float64
		want string
	}{
		{123456, "123k"}, {45678, "45.7k"}, {7890, "7890"}, {999.96, "1000"}, {1.234, "1.23"},
		{0.04561, "0.0456"}, {0, "0"}, {12_345_678, "12.3M"}, {math.NaN(), "-"},
	} {
		if got := Number(c.in); got != c.want {
			t.Errorf("Number(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

var testCase = scenario.Case{Name: "pub-q1/1", Scenario: "pub-q1", Measures: "PUBACKs a second",
	Metrics: []scenario.Metric{
		{Key: "pubacks_per_s", Label: "PUBACKs", Unit: "/s", Better: scenario.HigherIsBetter},
		{Key: "rtt_p99_ms", Label: "round trip p99", Unit: "ms", Better: scenario.LowerIsBetter},
	}}

var brokers = []Broker{{Name: "saguin", Version: "git x"}, {Name: "mosquitto", Version: "2.0.11"}}

func run(broker string, rep int, pubacks float64) scenario.Run {
	return scenario.Run{Case: "pub-q1/1", Broker: broker, Rep: rep, Values: scenario.Values{"pubacks_per_s": pubacks, "rtt_p99_ms": 1}}
}

func TestRatiosAreTakenRepetitionByRepetitionAgainstTheBase(t *testing.T) {
	runs := []scenario.Run{
		run("saguin", 1, 300), run("mosquitto", 1, 100),
		run("saguin", 2, 100), run("mosquitto", 2, 100),
		run("saguin", 3, 400), run("mosquitto", 3, 200),
	}
	cs := Build([]scenario.Case{testCase}, brokers, "saguin", runs)
	ratio := cs[0].Ratios["pubacks_per_s"]["mosquitto"]
	// Pairs: 3, 1, 2 - median 2 - where the medians' ratio would be 300/100 = 3.
	if ratio.Median != 2 || ratio.Min != 1 || ratio.Max != 3 || ratio.N != 3 {
		t.Fatalf("ratio %+v, want median 2 over 1-3 from 3 pairs", ratio)
	}
	if fig := cs[0].Figures["pubacks_per_s"]["saguin"]; fig.Median != 300 || fig.Min != 100 || fig.Max != 400 {
		t.Fatalf("saguin figures %+v", fig)
	}
	if _, ok := cs[0].Ratios["pubacks_per_s"]["saguin"]; ok {
		t.Fatal("the base has a ratio against itself")
	}
}

func TestAFailedRunIsLeftOutOfTheFiguresAndListed(t *testing.T) {
	runs := []scenario.Run{
		run("saguin", 1, 300), {Case: "pub-q1/1", Broker: "mosquitto", Rep: 1, Err: "mosquitto exited"},
		run("saguin", 2, 100), run("mosquitto", 2, 50),
	}
	cs := Build([]scenario.Case{testCase}, brokers, "saguin", runs)
	if fig := cs[0].Figures["pubacks_per_s"]["mosquitto"]; fig.N != 1 || fig.Median != 50 {
		t.Fatalf("mosquitto figures %+v, want the one run that worked", fig)
	}
	if r := cs[0].Ratios["pubacks_per_s"]["mosquitto"]; r.N != 1 || r.Median != 2 {
		t.Fatalf("ratio %+v, want only the complete pair (100/50)", r)
	}
	rep := testReport(cs, runs)
	var md bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "mosquitto rep 1: mosquitto exited") {
		t.Fatalf("the failure is not listed:\n%s", md.String())
	}
}

func testReport(cs []Case, runs []scenario.Run) *Report {
	return &Report{Profile: "short", Started: time.Unix(0, 0), Finished: time.Unix(60, 0), Brokers: brokers, Base: "saguin",
		Method: Method{Warmup: "1s", Window: "2s", Repetitions: 2}, Cases: cs, Runs: runs}
}

func TestMarkdownHasAColumnPerBrokerAndPerRatio(t *testing.T) {
	runs := []scenario.Run{run("saguin", 1, 300), run("mosquitto", 1, 100)}
	var md bytes.Buffer
	if err := testReport(Build([]scenario.Case{testCase}, brokers, "saguin", runs), runs).WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| case | figure | saguin | mosquitto | saguin/mosquitto |", "| **pub-q1/1** | PUBACKs (/s) ↑ | 300 | 100 | 3.00 |", "round trip p99 (ms) ↓"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
}

func TestChartIsWellFormedWithABarPerBrokerPerCase(t *testing.T) {
	runs := []scenario.Run{run("saguin", 1, 300), run("mosquitto", 1, 100), run("saguin", 2, 310), run("mosquitto", 2, 90)}
	var svg bytes.Buffer
	if err := testReport(Build([]scenario.Case{testCase}, brokers, "saguin", runs), runs).WriteSVG(&svg); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(&svg)
	bars := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the chart is not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "title" {
			bars++
		}
	}
	if bars != 2 {
		t.Fatalf("%d bars, want one per broker (2)", bars)
	}
}

func TestTallerBarIsAlwaysBetter(t *testing.T) {
	higher := scenario.Metric{Better: scenario.HigherIsBetter}
	lower := scenario.Metric{Better: scenario.LowerIsBetter}
	if scale(higher, 200, 100) != plotHeight/2 || scale(higher, 200, 200) != plotHeight {
		t.Fatal("a rate at half the best is not half height")
	}
	if scale(lower, 1, 2) != plotHeight/2 || scale(lower, 1, 1) != plotHeight {
		t.Fatal("a latency twice the best is not half height")
	}
}

func TestReportReadsBackFromItsJSON(t *testing.T) {
	runs := []scenario.Run{run("saguin", 1, 300), {Case: "pub-q1/1", Broker: "mosquitto", Rep: 1, Err: "x"}}
	rep := testReport(Build([]scenario.Case{testCase}, brokers, "saguin", runs), runs)
	raw, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if got := back.Cases[0].Figures["pubacks_per_s"]["mosquitto"]; got.N != 0 || !math.IsNaN(got.Median) {
		t.Fatalf("a broker with no figure read back as %+v", got)
	}
	if back.Runs[0].Values["pubacks_per_s"] != 300 {
		t.Fatalf("runs read back as %+v", back.Runs)
	}
}
