package acl

import (
	"bytes"
	"strings"
	"testing"
)

// rulesACL is the acl_file the --acl golden tests below explain: a %c rule,
// a channel rule narrowed by a %u filter, a features denial and a sessions
// grant - each a shape of output checklist-operations B.7/B.8 names.
const rulesACL = `roles:
  cohort:
    - topic: cohort/%c/#
      allow: [write, read]
  device:
    - channel: events
      filter: iot/%u/events/+
      allow: [write, read]
    - topic: iot/%u/health
      allow: [write, read]
  sensor:
    - broker: features
      deny: [will, qos2]
  on-call:
    - broker: sessions
      allow: [disconnect]
users:
  "cohort-*": [cohort]
  "device-*": [device, sensor]
  oncall: [on-call]
`

// explained renders the three forms --acl prints for one question: the
// paragraph, the list rows and the --json rows, and the --json object.
type explained struct{ paragraph, rows, jsonRows, object string }

func explain(t *testing.T, src, user, clientID string, hasClientID bool) explained {
	t.Helper()
	g := mustParse(t, src).Explain(user, clientID, hasClientID)
	b := Bounds{PublishRate: 500}
	var p, r, j, o bytes.Buffer
	g.WriteParagraph(&p, hasClientID, b)
	g.WriteRows(&r, user, b)
	g.WriteJSONRows(&j, user, b)
	g.WriteJSONObject(&o, hasClientID)
	return explained{p.String(), r.String(), j.String(), o.String()}
}

func golden(t *testing.T, form, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s:\n%s\nwant:\n%s", form, got, want)
	}
}

// Checklist B63 (RFC 0002 "Explaining a decision: --acl"): a rule using %c
// asked about without a client id is answered by a sentence saying the
// substitution cannot be made - never by a grant line that looks resolved;
// given the client id, the rule is resolved.
func TestB63PercentCWithoutAClientIDIsASentence(t *testing.T) {
	e := explain(t, rulesACL, "cohort-north", "", false)
	golden(t, "paragraph", e.paragraph, `user cohort-north, under /etc/saguin/acl.yaml

entry in force: "cohort-*" (line 18)

roles and the rules they carry:
  cohort (line 2)
    topic cohort/%c/#: allow write, read (line 3)

effective grants:
  none

role cohort's rule cohort/%c/# (line 3) uses %c, and no client id was given: the substitution cannot be made, so what it grants is not shown. Give the client id after the user name.

publish limits: 500 messages/s, no bound bytes/s (the broker-wide figures)

note: this file scopes rules by %c, the client id - whatever the device typed. It separates devices sharing one credential by mistake, not by force: they are one principal, and one can take another's topics (the displaced device reconnects and somebody sees it). client_ids: on the entry keeps the credential inside its cohort.
`)
	// AMB-49: the list form's rows are the ones that resolve (here none: a
	// row of -), and a # note, skipped on re-input, says why.
	golden(t, "list", e.rows, "cohort-north\tcohort\t-\t-\t-\t500\tno bound\n"+
		"# cohort-north: role cohort, topic cohort/%c/# (line 3) uses %c and no client id was given, so it is not resolved; give one after the user name\n")

	e = explain(t, rulesACL, "cohort-north", "north-17", true)
	golden(t, "list with a client id", e.rows, "cohort-north\tcohort\ttopic\tcohort/north-17/#\twrite,read\t500\tno bound\n")
	if strings.Contains(e.paragraph, "cannot be made") {
		t.Errorf("given a client id, the paragraph still says %%c cannot be substituted:\n%s", e.paragraph)
	}
}

// Checklist B64 (RFC 0002 "Roles, and users matched by pattern"): the note
// on what %c scoping is worth is printed when the file uses %c - for every
// user asked about, since it is about the file - and only then.
func TestB64PercentCNoteOnlyWhenTheFileUsesIt(t *testing.T) {
	const note = "note: this file scopes rules by %c"
	if e := explain(t, rulesACL, "oncall", "", false); !strings.Contains(e.paragraph, note) {
		t.Errorf("a file using %%c: no note on what %%c scoping is worth:\n%s", e.paragraph)
	}
	without := strings.Replace(rulesACL, "cohort/%c/#", "cohort/%u/#", 1)
	for _, user := range []string{"cohort-north", "oncall"} {
		if e := explain(t, without, user, "", false); strings.Contains(e.paragraph, "%c") {
			t.Errorf("%s under a file without %%c is told about %%c:\n%s", user, e.paragraph)
		}
	}
}

// Checklist B65 / B25 (RFC 0002 "Roles, and users matched by pattern"): a
// rule whose %u would put in a name holding +, # or / grants nothing, the
// entry's other rules still apply, and every form names the withheld rule
// as the file writes it - a channel rule by its channel and filter.
func TestB65WithheldRulesAreNamed(t *testing.T) {
	e := explain(t, rulesACL, "device-a/b", "", false)
	for _, want := range []string{
		"withheld: role device's rule events (iot/%u/events/+) (line 6) grants nothing here",
		"withheld: role device's rule iot/%u/health (line 9) grants nothing here",
		"effective grants:\n  sensor\tbroker\tfeatures\tdeny:will,qos2\n\n",
	} {
		if !strings.Contains(e.paragraph, want) {
			t.Errorf("paragraph lacks %q:\n%s", want, e.paragraph)
		}
	}
	golden(t, "list", e.rows, "device-a/b\tsensor\tbroker\tfeatures\tdeny:will,qos2\t500\tno bound\n"+
		"# device-a/b: role device, channel events (iot/%u/events/+) (line 6) is withheld: the name it would put in holds +, # or /, or is empty\n"+
		"# device-a/b: role device, topic iot/%u/health (line 9) is withheld: the name it would put in holds +, # or /, or is empty\n")
	golden(t, "object", e.object, `{"user":"device-a/b","acl_file":"/etc/saguin/acl.yaml","pattern_applied":"device-*","patterns_matched":["device-*"],"patterns_in_file":["cohort-*","device-*","oncall"],"grants":[{"role":"sensor","kind":"broker","subject":"features","verbs":[],"denies":["will","qos2"]}],"grants_withheld":[{"role":"device","kind":"channel","subject":"events (iot/%u/events/+)","line":6},{"role":"device","kind":"topic","subject":"iot/%u/health","line":9}],"client_id_allowed":null}`+"\n")
}

// Checklist B70 (RFC 0002 "Explaining a decision: --acl"): a channel rule
// narrowed by filter: is shown as channel (filter), %u already substituted,
// in the list form, its --json rows and the --json object.
func TestB70NarrowedChannelSubjectIsChannelAndFilter(t *testing.T) {
	e := explain(t, rulesACL, "device-7", "", false)
	golden(t, "list", e.rows, "device-7\tdevice\tchannel\tevents (iot/device-7/events/+)\twrite,read\t500\tno bound\n"+
		"device-7\tdevice\ttopic\tiot/device-7/health\twrite,read\t500\tno bound\n"+
		"device-7\tsensor\tbroker\tfeatures\tdeny:will,qos2\t500\tno bound\n")
	if !strings.HasPrefix(e.jsonRows, `{"user":"device-7","role":"device","kind":"channel","subject":"events (iot/device-7/events/+)","verbs":["write","read"],"denies":[],"publish_rate":500,"publish_bytes":null}`+"\n") {
		t.Errorf("--json rows:\n%s", e.jsonRows)
	}
	if !strings.Contains(e.object, `{"role":"device","kind":"channel","subject":"events (iot/device-7/events/+)","verbs":["write","read"],"denies":[]}`) {
		t.Errorf("--json object:\n%s", e.object)
	}
}

// Checklist B75 (AMB-32, the reading in docs/authentication.md): the list
// form has no denies column, so a broker: features row is kind broker,
// subject features and deny:<features> in the verbs column; a broker:
// sessions row is kind broker, subject sessions, verbs disconnect. Their
// --json rows carry the denials in denies, the verbs in verbs.
func TestB75BrokerRowsInTheListForm(t *testing.T) {
	e := explain(t, rulesACL, "oncall", "", false)
	golden(t, "sessions row", e.rows, "oncall\ton-call\tbroker\tsessions\tdisconnect\t500\tno bound\n")
	golden(t, "sessions --json row", e.jsonRows, `{"user":"oncall","role":"on-call","kind":"broker","subject":"sessions","verbs":["disconnect"],"denies":[],"publish_rate":500,"publish_bytes":null}`+"\n")
	e = explain(t, rulesACL, "device-7", "", false)
	if !strings.HasSuffix(e.rows, "device-7\tsensor\tbroker\tfeatures\tdeny:will,qos2\t500\tno bound\n") {
		t.Errorf("features row:\n%s", e.rows)
	}
	if !strings.HasSuffix(e.jsonRows, `{"user":"device-7","role":"sensor","kind":"broker","subject":"features","verbs":[],"denies":["will","qos2"],"publish_rate":500,"publish_bytes":null}`+"\n") {
		t.Errorf("features --json row:\n%s", e.jsonRows)
	}
	// Each row still has the seven columns a cut relies on.
	for _, line := range strings.Split(strings.TrimSuffix(e.rows, "\n"), "\n") {
		if n := len(strings.Split(line, "\t")); n != 7 {
			t.Errorf("%d columns, want 7: %q", n, line)
		}
	}
}

// Checklist B82 (RFC 0005 "What the /v1 routes answer with"): a features
// grant in the --json object is {"role","kind":"broker","subject":"features",
// "verbs":[],"denies":[...]} - verbs an empty list, never null.
func TestB82FeaturesGrantJSONShape(t *testing.T) {
	e := explain(t, rulesACL, "device-7", "", false)
	const want = `{"role":"sensor","kind":"broker","subject":"features","verbs":[],"denies":["will","qos2"]}]`
	if !strings.Contains(e.object, want) {
		t.Errorf("--json object:\n%s\nwant its grants to end with %s", e.object, want)
	}
}
