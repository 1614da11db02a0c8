package config

import (
	"strings"
	"testing"
)

// topicSpaceConfig is the configuration at the top of RFC 0002 "The topic space".
const topicSpaceConfig = minimal + `channels:
  water-location:
    type: latest
    filter: iot/water/+/location/#
  water-measurement:
    type: append
    filter: iot/water/+/+/#
  weather-measurement:
    type: append
    filter: iot/weather/+/{data,events}
`

func TestTopicSpaceTable(t *testing.T) {
	routes := accepted(t, topicSpaceConfig).Routes()
	cases := []struct{ topic, channel, typ string }{
		{"iot/water/w-7/location", "water-location", "latest"},
		{"iot/water/w-7/location/gps", "water-location", "latest"},
		{"iot/water/w-7/flow", "water-measurement", "append"},
		{"iot/water/w-7/flow/raw", "water-measurement", "append"},
		{"iot/weather/st-3/data", "weather-measurement", "append"},
		{"iot/weather/st-3/data/raw", "", ""},
		{"iot/weather/st-3/status", "", ""},
	}
	for _, c := range cases {
		ch, _, ok := routes.Topic(c.topic)
		switch {
		case c.channel == "" && ok:
			t.Errorf("%s lands in %s, want broadcast", c.topic, ch.Name)
		case c.channel != "" && (!ok || ch.Name != c.channel || ch.Type != c.typ):
			t.Errorf("%s lands in %v, want %s (%s)", c.topic, ch, c.channel, c.typ)
		}
	}
}

func TestWhatAFilterReachesTable(t *testing.T) {
	routes := accepted(t, topicSpaceConfig).Routes()
	cases := []struct {
		filter string
		want   string // channel:sends, in listing order
	}{
		{"iot/water/w-7/location", "water-location:current"},
		{"iot/water/+/location/#", "water-location:current"},
		{"iot/water/w-7/#", "water-measurement:replayed water-location:current"},
		{"iot/weather/st-3/data/raw", ""},
		{"#", "water-measurement:replayed weather-measurement:replayed water-location:current"},
	}
	for _, c := range cases {
		var got []string
		for _, r := range routes.Filter(c.filter) {
			got = append(got, r.Channel.Name+":"+r.Sends)
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("%s is served %v, want %s", c.filter, got, c.want)
		}
	}
}

func TestFilterLyingInsideAQueueIsRefusedAndACrossingOneExcludesIt(t *testing.T) {
	routes := accepted(t, minimal+"channels:\n  inspections:\n    type: queue\n    filter: iot/water/+/inspect\n").Routes()
	for filter, want := range map[string]string{
		"iot/water/+/inspect":         "inspections:refused",
		"iot/water/w-7/inspect":       "inspections:refused",
		"iot/#":                       "inspections:excluded inspections__dlq:replayed",
		"iot/water/+/inspect/__dlq":   "inspections__dlq:replayed",
		"iot/water/w-7/inspect/__dlq": "inspections__dlq:replayed",
	} {
		var got []string
		for _, r := range routes.Filter(filter) {
			got = append(got, r.Channel.Name+":"+r.Sends)
		}
		if strings.Join(got, " ") != want {
			t.Errorf("%s: %v, want %s", filter, got, want)
		}
	}
}

func TestRoutingTableListsEveryExpansion(t *testing.T) {
	routes := accepted(t, topicSpaceConfig).Routes()
	var got []string
	for _, r := range routes.Expanded() {
		got = append(got, r.Filter+"="+r.Channel.Name)
	}
	want := "iot/water/+/+/#=water-measurement iot/weather/+/data=weather-measurement iot/weather/+/events=weather-measurement iot/water/+/location/#=water-location"
	if strings.Join(got, " ") != want {
		t.Errorf("table %v", got)
	}
}
