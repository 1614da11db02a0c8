package acl

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"
)

// demoChannels are the channels of examples/channels.yaml and RFC 0002's
// --acl examples, with the dead-letter channel the queue derives.
var demoChannels = []Channel{
	{Name: "events", Type: Append, Filter: "iot/+/events/+", Filters: []string{"iot/+/events/+"}},
	{Name: "jobs", Type: Queue, Filter: "iot/+/work/+", Filters: []string{"iot/+/work/+"}},
	{Name: "jobs__dlq", Type: Append, Filter: "iot/+/work/+/__dlq", Filters: []string{"iot/+/work/+/__dlq"}},
	{Name: "presence", Type: Latest, Filter: "iot/+/presence/+", Filters: []string{"iot/+/presence/+"}},
	{Name: "state", Type: Latest, Filter: "iot/+/state/+", Filters: []string{"iot/+/state/+"}},
}

func loadExample(t *testing.T) *ACL {
	t.Helper()
	data, err := readExample()
	if err != nil {
		t.Fatal(err)
	}
	a, err := Parse("/tmp/saguin-demo/acl.yaml", data, Options{Channels: demoChannels, MaxTopicLevels: 16})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// columns reads a line of the RFC's aligned example as its columns: two or
// more spaces separate them there, a tab here.
var aligned = regexp.MustCompile(`  +`)

// TestListFormIsTheRFCExample is RFC 0002 "Explaining a decision: --acl",
// printf 'demo\ndevice-7\nnobody\n' | saguin --acl examples/channels.yaml.
func TestListFormIsTheRFCExample(t *testing.T) {
	const rfc = `# user    role    kind     subject                verbs              rate      bytes
demo      tour    channel  events                 write,read,seek    no bound  no bound
demo      tour    channel  state                  write,read,delete  no bound  no bound
demo      tour    channel  presence               write,read,delete  no bound  no bound
demo      tour    channel  jobs                   write,consume      no bound  no bound
demo      tour    channel  jobs__dlq              write,read,seek    no bound  no bound
demo      tour    topic    #                      write,read         no bound  no bound
device-7  device  topic    iot/+/health/device-7  write,read         200       65536
nobody    -       -        -                      -                  no bound  no bound
`
	a := loadExample(t)
	var out bytes.Buffer
	out.WriteString(ListHeader)
	for _, u := range []string{"demo", "device-7", "nobody"} {
		a.Explain(u, "", false).WriteRows(&out, u, Bounds{})
	}
	want := aligned.ReplaceAllString(rfc, "\t")
	// The header's first column is "# user", one space.
	if out.String() != want {
		t.Errorf("list form:\n%s\nwant (tab-separated):\n%s", out.String(), want)
	}
}

func TestJSONListFormIsTheRFCExample(t *testing.T) {
	const rfc = `{"user":"device-7","role":"device","kind":"topic","subject":"iot/+/health/device-7","verbs":["write","read"],"denies":[],"publish_rate":200,"publish_bytes":65536}
{"user":"nobody","role":null,"kind":null,"subject":null,"verbs":[],"denies":[],"publish_rate":null,"publish_bytes":null}
`
	a := loadExample(t)
	var out bytes.Buffer
	for _, u := range []string{"device-7", "nobody"} {
		a.Explain(u, "", false).WriteJSONRows(&out, u, Bounds{})
	}
	if out.String() != rfc {
		t.Errorf("--json list form:\n%s\nwant:\n%s", out.String(), rfc)
	}
}

func TestJSONObjectIsTheRFCExample(t *testing.T) {
	const rfc = `{"user":"device-7","acl_file":"/tmp/saguin-demo/acl.yaml","pattern_applied":"device-7","patterns_matched":["device-*","device-7"],"patterns_in_file":["demo","device-*","device-7"],"grants":[{"role":"device","kind":"topic","subject":"iot/+/health/device-7","verbs":["write","read"],"denies":[]}],"grants_withheld":[],"client_id_allowed":null}
`
	var out bytes.Buffer
	loadExample(t).Explain("device-7", "", false).WriteJSONObject(&out, false)
	if out.String() != rfc {
		t.Errorf("--json object:\n%s\nwant:\n%s", out.String(), rfc)
	}
}

func TestJSONObjectNobodyHasEveryField(t *testing.T) {
	var out bytes.Buffer
	loadExample(t).Explain("nobody", "c1", true).WriteJSONObject(&out, true)
	want := `{"user":"nobody","acl_file":"/tmp/saguin-demo/acl.yaml","pattern_applied":null,"patterns_matched":[],"patterns_in_file":["demo","device-*","device-7"],"grants":[],"grants_withheld":[],"client_id_allowed":true}` + "\n"
	if out.String() != want {
		t.Errorf("got %s want %s", out.String(), want)
	}
}

func TestParagraphNamesEntryInForceAndShadowed(t *testing.T) {
	var out bytes.Buffer
	loadExample(t).Explain("device-7", "", false).WriteParagraph(&out, false, Bounds{})
	s := out.String()
	for _, want := range []string{`entry in force: "device-7"`, `shadows:        "device-*"`, "iot/+/health/device-7", "publish limits: 200 messages/s, 65536 bytes/s"} {
		if !strings.Contains(s, want) {
			t.Errorf("paragraph lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "%c") {
		t.Errorf("a file without %%c is told what %%c scoping is worth:\n%s", s)
	}
}

// TestShadowedEntryWithLimitsIsNoted: device-7 without limits beside a
// device-* with them takes the fleet's bound off, and --acl says so.
func TestShadowedEntryWithLimitsIsNoted(t *testing.T) {
	a := mustParse(t, `
roles:
  r:
    - topic: a/#
      allow: [write]
users:
  "device-*":
    roles: [r]
    limits: {publish_rate: 10}
  device-7: [r]
`)
	var out bytes.Buffer
	a.Explain("device-7", "", false).WriteParagraph(&out, false, Bounds{PublishRate: 500})
	if !strings.Contains(out.String(), `note: the shadowed entry "device-*" carries limits`) || !strings.Contains(out.String(), "500 messages/s") {
		t.Errorf("paragraph:\n%s", out.String())
	}
}

func mustParse(t *testing.T, src string) *ACL {
	t.Helper()
	a, err := Parse("/etc/saguin/acl.yaml", []byte(src), Options{Channels: demoChannels, MaxTopicLevels: 8})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func readExample() ([]byte, error) { return os.ReadFile("testdata/rfc-example-acl.yaml") }
