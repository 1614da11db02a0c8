package config

import (
	"errors"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// keyRead, when set, is told the path of every key the loader asks for: the
// schema as the code reads it, which the documentation test compares
// docs/configuration.md against so the two cannot drift.
var keyRead func(path string)

// obj reads one mapping of the file against the schema: every key read is
// marked, and done reports whatever was left as a key this broker does not
// define - whatever its value (RFC 0002 "Validation").
type obj struct {
	c    *collector
	n    *node
	path string
	used map[string]bool
	// home is the line of the key this mapping is the value of, where a
	// finding about a key missing from it is reported.
	home int
	file string
	// notMapping: a value was written and is not a mapping, which object
	// has reported; nothing more is said about the keys it lacks.
	notMapping bool
	// refused are keys that exist elsewhere and were refused here with a
	// reason of their own; they are not offered as "the keys here".
	refused map[string]bool
}

func (c *collector) object(n *node, path string) *obj {
	o := &obj{c: c, n: n, path: path, used: map[string]bool{}, refused: map[string]bool{}}
	if n == nil || n.kind == nullNode {
		o.n = nil
		return o
	}
	if n.kind != mapNode {
		c.at(n, path, " is %s; it is a mapping of keys", n.describe())
		o.n, o.notMapping = nil, true
	}
	return o
}

func (o *obj) key(k string) string {
	if o.path == "" {
		return k
	}
	return o.path + "." + k
}

// get returns the value written under k, or nil when k is absent. A key
// written with no value (k:) is treated as absent only by optional keys;
// every reader below refuses it with a message saying so.
func (o *obj) get(k string) *node {
	if keyRead != nil {
		keyRead(o.key(k))
	}
	o.used[k] = true
	if o.n == nil {
		return nil
	}
	for i, key := range o.n.keys {
		if key == k {
			if o.c.pos == nil {
				o.c.pos = map[string]Finding{}
			}
			o.c.pos[o.key(k)] = Finding{File: o.n.file, Line: o.n.keyLine[i], Column: o.n.keyCol[i]}
			return o.n.vals[i]
		}
	}
	return nil
}

func (o *obj) has(k string) bool {
	if o.n == nil {
		return false
	}
	for _, key := range o.n.keys {
		if key == k {
			return true
		}
	}
	return false
}

func (o *obj) line(k string) int {
	if o.n == nil {
		return o.home
	}
	for i, key := range o.n.keys {
		if key == k {
			return o.n.keyLine[i]
		}
	}
	if o.home > 0 {
		return o.home
	}
	return o.n.line
}

// child reads the mapping under key k, remembering k's line for findings
// about keys missing from it.
func (o *obj) child(k string) *obj {
	c := o.c.object(o.get(k), o.key(k))
	c.home, c.file = o.line(k), o.file
	if o.n != nil {
		c.file = o.n.file
	}
	return c
}

// at reports a finding about key k of this mapping, at the line k is on.
func (o *obj) at(k, format string, args ...any) {
	file, line := o.file, o.line(k)
	if o.n != nil {
		file = o.n.file
	}
	o.c.atLine(file, line, o.key(k), format, args...)
	if o.n != nil {
		for i, key := range o.n.keys {
			if key == k {
				o.c.list[len(o.c.list)-1].Column = o.n.keyCol[i]
			}
		}
	}
}

// done refuses every key nothing read. Keys refused elsewhere with a reason of
// their own (a key on the wrong channel type) are marked used by that check.
func (o *obj) done() {
	if o.n == nil {
		return
	}
	var known []string
	for k := range o.used {
		if !o.refused[k] {
			known = append(known, k)
		}
	}
	sort.Strings(known)
	for i, k := range o.n.keys {
		if o.used[k] {
			continue
		}
		o.c.atLine(o.n.file, o.n.keyLine[i], o.key(k),
			" is not a key Sagüin reads, so it is refused rather than ignored; the keys here are %s", strings.Join(known, ", "))
	}
}

// scalar returns the text of a scalar value, reporting anything else.
func (o *obj) scalar(k string) (string, *node, bool) {
	v := o.get(k)
	if v == nil {
		return "", nil, false
	}
	if v.kind == nullNode {
		o.at(k, " is written with no value; give it one or leave the key out")
		return "", v, false
	}
	if v.kind != scalarNode {
		o.at(k, " is %s; it takes a single value", v.describe())
		return "", v, false
	}
	return v.text, v, true
}

func (o *obj) str(k string) (string, bool) {
	s, _, ok := o.scalar(k)
	if ok && s == "" {
		o.at(k, " is empty; give it a value or leave the key out")
		return "", false
	}
	return s, ok
}

func (o *obj) boolean(k string) (bool, bool) {
	s, _, ok := o.scalar(k)
	if !ok {
		return false, false
	}
	// YAML's core schema spells a boolean true, True or TRUE.
	switch s {
	case "true", "True", "TRUE":
		return true, true
	case "false", "False", "FALSE":
		return false, true
	}
	o.at(k, " %q: it is true or false", s)
	return false, false
}

func (o *obj) enum(k string, def string, values ...string) string {
	s, _, ok := o.scalar(k)
	if !ok {
		return def
	}
	for _, v := range values {
		if s == v {
			return s
		}
	}
	o.at(k, " %q: it is one of %s", s, orList(values))
	return def
}

func orList(values []string) string {
	switch len(values) {
	case 1:
		return values[0]
	case 2:
		return values[0] + " or " + values[1]
	}
	return strings.Join(values[:len(values)-1], ", ") + " or " + values[len(values)-1]
}

// intSpec is the accepted range of a whole-number key.
type intSpec struct {
	min, max int64
	none     bool   // the word none is accepted, read as 0
	why      string // said after a refusal: what to write instead
}

func (o *obj) integer(k string, def int64, spec intSpec) int64 {
	s, _, ok := o.scalar(k)
	if !ok {
		return def
	}
	if s == "none" {
		if spec.none {
			return 0
		}
		o.at(k, " none: this key takes a number and none is refused here%s", because(spec.why))
		return def
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || strings.HasPrefix(s, "+") {
		o.at(k, " %q is not a whole number%s", s, because(spec.why))
		return def
	}
	if n < spec.min || n > spec.max {
		o.at(k, " %d is outside %d to %d%s", n, spec.min, spec.max, because(spec.why))
		return def
	}
	return n
}

func because(why string) string {
	if why == "" {
		return ""
	}
	return "; " + why
}

// durSpec is what a duration key accepts.
type durSpec struct {
	min, max  time.Duration // max 0: no ceiling
	none      bool          // none accepted, read as 0
	subSecond bool          // one of the five keys honouring milliseconds
	why       string
}

func (o *obj) duration(k string, def time.Duration, spec durSpec) time.Duration {
	s, _, ok := o.scalar(k)
	if !ok {
		return def
	}
	d, err := ParseDuration(s)
	switch {
	case errors.Is(err, errNone):
		if spec.none {
			return 0
		}
		o.at(k, " none is refused here%s", because(spec.why))
		return def
	case err != nil:
		o.at(k, " %s", err.Error())
		return def
	case d == 0:
		o.at(k, " %q: zero is refused, because it has no honest meaning here - it would read as either keep nothing or none%s", s, because(spec.why))
		return def
	case !spec.subSecond && d%time.Second != 0:
		o.at(k, " %q: this key is held in whole seconds, so a sub-second value would be divided down to zero; write it in s, m, h or d", s)
		return def
	case d < spec.min:
		o.at(k, " %q is shorter than the %s this key accepts%s", s, FormatDuration(spec.min), because(spec.why))
		return def
	case spec.max > 0 && d > spec.max:
		o.at(k, " %q is longer than the %s this key accepts%s", s, FormatDuration(spec.max), because(spec.why))
		return def
	}
	return d
}

// sizeSpec is what a size key accepts.
type sizeSpec struct {
	min, max int64 // max 0: no ceiling
	none     bool
	why      string
}

func (o *obj) size(k string, def int64, spec sizeSpec) int64 {
	s, _, ok := o.scalar(k)
	if !ok {
		return def
	}
	n, err := ParseSize(s)
	switch {
	case errors.Is(err, errNone):
		if spec.none {
			return 0
		}
		o.at(k, " none is refused here%s", because(spec.why))
		return def
	case err != nil:
		o.at(k, " %s", err.Error())
		return def
	case n == 0:
		o.at(k, " %q: zero is refused, because it has no honest meaning here - it would read as either hold nothing or none%s", s, because(spec.why))
		return def
	case n < spec.min:
		o.at(k, " %q is below the %s this key accepts%s", s, FormatSize(spec.min), because(spec.why))
		return def
	case spec.max > 0 && n > spec.max:
		o.at(k, " %q is above the %s this key accepts%s", s, FormatSize(spec.max), because(spec.why))
		return def
	}
	return n
}

// absPath reads a path that must be absolute, cleaned. none, where accepted,
// returns "" and true.
func (o *obj) absPath(k string, what string, allowNone bool) (string, bool) {
	s, _, ok := o.scalar(k)
	if !ok {
		return "", false
	}
	if s == "none" && allowNone {
		return "", true
	}
	if s == "" {
		o.at(k, " is empty; it names %s by an absolute path", what)
		return "", false
	}
	if strings.IndexByte(s, 0) >= 0 {
		o.at(k, " holds a NUL byte, which no path can")
		return "", false
	}
	if !filepath.IsAbs(s) {
		o.at(k, " %q is relative; it names %s by an absolute path, so that what the broker uses does not depend on the directory it was started from", s, what)
		return "", false
	}
	return filepath.Clean(s), true
}

// list reads a list of scalars.
func (o *obj) stringList(k string) []string {
	v := o.get(k)
	if v == nil {
		return nil
	}
	if v.kind != seqNode {
		o.at(k, " is %s; it is a list", v.describe())
		return nil
	}
	var out []string
	for _, item := range v.items {
		if item.kind != scalarNode {
			o.c.at(item, o.key(k), " holds %s; each entry is a single value", item.describe())
			continue
		}
		out = append(out, item.text)
	}
	return out
}

// refuse marks k as read and, when written, reports it with a reason of its
// own - a key that exists elsewhere but not here.
func (o *obj) refuse(k string, format string, args ...any) {
	o.used[k] = true
	o.refused[k] = true
	if o.has(k) {
		o.at(k, format, args...)
	}
}
