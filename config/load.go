// Package config reads Sagüin's configuration file (RFC 0002 "Configuration",
// RFC 0005 "The operations listener"): YAML with !include under channels and
// broker.storage.providers, every key typed and defaulted, every rule of RFC
// 0002 "Validation" and of each key's own section checked, and every finding
// reported at once with its key path, file and line. It also renders what it
// resolved (--check-config --output, /v1/operations/config) and answers where a
// topic lands (--route) with the functions the broker routes with.
//
// Nothing here creates, writes, binds or starts anything: the only files it
// opens are the configuration, its includes, and the files it names, read to
// prove they can be used.
package config

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Load reads, validates and resolves the configuration at path, and opens every
// file it names (password files, certificates, keys, authorities, the
// acl_file) to prove each can be used.
//
// The error, when there is one, is an *Error listing every finding. The
// *Config is returned alongside it when the configuration itself is valid and
// only the named files are missing or unusable - --check-config --output prints
// the document in that case - and is nil otherwise.
func Load(path string) (*Config, error) {
	cfg, schema := parse(path)
	if cfg == nil {
		return nil, &Error{Findings: schema}
	}
	// Every finding at once: the files a configuration names are checked even
	// when the schema already failed, so one run reports both.
	all := append(schema, cfg.CheckFiles()...)
	switch {
	case len(schema) > 0:
		return nil, &Error{Findings: all}
	case len(all) > 0:
		return cfg, &Error{Findings: all}
	}
	return cfg, nil
}

// Parse is Load without opening the files the configuration names.
func Parse(path string) (*Config, error) {
	cfg, findings := parse(path)
	if len(findings) > 0 {
		return nil, &Error{Findings: findings}
	}
	return cfg, nil
}

// parse reads the file and returns what it resolved with every schema
// finding. The configuration is nil only when the file could not be read or
// parsed as YAML at all.
func parse(path string) (*Config, []Finding) {
	l := &loader{display: path, included: map[string]string{}}
	root, err := l.readFile(path, path)
	if err != nil {
		return nil, []Finding{findingOf(path, err)}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, []Finding{{File: path, Message: err.Error()}}
	}
	l.abs = abs
	cfg := l.load(root)
	cfg.Notes = l.notes.list
	return cfg, l.c.list
}

// findingOf turns a file that could not be read or parsed into a finding.
func findingOf(file string, err error) Finding {
	var de *docError
	if errors.As(err, &de) {
		return Finding{File: de.file, Line: de.line, Message: de.msg}
	}
	return Finding{File: file, Message: err.Error()}
}

type loader struct {
	c     collector
	notes collector
	// display is the master file as it was named; abs its absolute path.
	display, abs string
	// included maps each included file's cleaned absolute path to the file
	// that named it, to refuse one file named twice.
	included map[string]string
	cfg      *Config
}

// readFile reads and parses one file, bounded before it is read.
func (l *loader) readFile(path, display string) (*node, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot be read: %w", err)
	}
	defer f.Close()
	src, err := io.ReadAll(io.LimitReader(f, maxDocumentBytes+1))
	if err != nil {
		return nil, fmt.Errorf("cannot be read: %w", err)
	}
	if len(src) > maxDocumentBytes {
		return nil, fmt.Errorf("is larger than %s, which no configuration written by hand is", FormatSize(maxDocumentBytes))
	}
	return parseDocument(display, src)
}

func (l *loader) load(root *node) *Config {
	l.cfg = &Config{File: l.abs}
	l.refuseStrayIncludes(root, "", true)
	top := l.c.object(root, "")
	if root != nil && root.kind == nullNode {
		l.c.at(root, "", "the file is empty; a configuration names at least broker.id and broker.storage")
	}
	b := top.child("broker")
	if b.n == nil && (root == nil || root.kind != nullNode) {
		top.at("broker", " is missing or empty; it holds broker.id and broker.storage, which have no defaults")
	}
	// RFC 0002 names these keys limits.<key> although they are written
	// under broker:, and its example messages do too; findings follow it.
	lim := b.child("limits")
	lim.path = "limits"
	l.cfg.Broker.Limits = l.limits(lim)
	l.broker(b)
	l.channels(top.get("channels"))
	l.bridges(top.get("bridges"))
	top.done()
	l.validate()
	return l.cfg
}

// group is one set of channels or providers: the mapping written in place, or
// the contents of one included file.
type group struct {
	n       *node
	file    string // display name of the file it is in
	absFile string
}

// groups reads the list-or-map shape of channels: and broker.storage.providers
// (RFC 0002 "Channels split across files").
func (l *loader) groups(n *node, key string) []group {
	if n == nil || n.kind == nullNode {
		return nil
	}
	switch n.kind {
	case mapNode:
		return []group{{n: n, file: n.file, absFile: l.absOf(n.file)}}
	case seqNode:
	default:
		l.c.at(n, key, " is %s; it is a mapping of names, or a list of !include <file> entries and groups written in place", n.describe())
		return nil
	}
	var out []group
	for _, item := range n.items {
		switch {
		case item.tag == "!include":
			if g, ok := l.include(item, key); ok {
				out = append(out, g)
			}
		case item.tag != "":
			l.c.at(item, key, " entry tagged %s: the only tag accepted is !include <file>", item.tag)
		case item.kind == mapNode:
			out = append(out, group{n: item, file: item.file, absFile: l.absOf(item.file)})
		default:
			l.c.at(item, key, " entry is %s; each entry is !include <file> or a group of names written in place", item.describe())
		}
	}
	return out
}

func (l *loader) absOf(display string) string {
	if display == l.display {
		return l.abs
	}
	a, err := filepath.Abs(display)
	if err != nil {
		return display
	}
	return a
}

func (l *loader) include(item *node, key string) (group, bool) {
	if item.file != l.display {
		// Only the master names files: an included file naming one is the
		// nesting RFC 0002 refuses.
		l.c.at(item, key, " !include inside an included file: a master file names files and those files name none")
		return group{}, false
	}
	if item.kind != scalarNode || item.text == "" {
		l.c.at(item, key, " !include takes one file name")
		return group{}, false
	}
	rel := item.text
	if strings.ContainsAny(rel, "*?[") {
		l.c.at(item, key, " !include %q: globs are not expanded - what the broker serves must not depend on a directory listing; name each file", rel)
		return group{}, false
	}
	display := rel
	if !filepath.IsAbs(rel) {
		display = filepath.Join(filepath.Dir(l.display), rel)
	}
	abs := l.absOf(display)
	if abs == l.abs {
		l.c.at(item, key, " !include %q names the master file itself", rel)
		return group{}, false
	}
	if prev, dup := l.included[abs]; dup {
		l.c.at(item, key, " !include %q names a file already included (%s)", rel, prev)
		return group{}, false
	}
	l.included[abs] = fmt.Sprintf("%s:%d", item.file, item.line)
	if st, err := os.Stat(display); err == nil && !st.Mode().IsRegular() {
		l.c.at(item, key, " !include %q: %s is not a regular file", rel, display)
		return group{}, false
	}
	n, err := l.readFile(display, display)
	if err != nil {
		var de *docError
		if errors.As(err, &de) {
			l.c.atLine(de.file, de.line, key, " (included from %s:%d) %s", item.file, item.line, de.msg)
		} else {
			l.c.at(item, key, " !include %q: %s %v", rel, display, err)
		}
		return group{}, false
	}
	l.refuseStrayIncludes(n, key, false)
	switch n.kind {
	case nullNode:
		return group{}, false
	case mapNode:
		return group{n: n, file: display, absFile: abs}, true
	}
	l.c.at(n, key, " %s holds %s; an included file holds names and their settings, as a mapping", display, n.describe())
	return group{}, false
}

// refuseStrayIncludes reports every !include outside the two list positions
// that take one. In the master those are the items of channels: and
// broker.storage.providers; an included file may hold none at all.
func (l *loader) refuseStrayIncludes(n *node, path string, master bool) {
	var walk func(n *node, path string, allowed bool)
	walk = func(n *node, path string, allowed bool) {
		if n == nil {
			return
		}
		if n.tag == "!include" && !allowed {
			if master {
				l.c.at(n, path, " !include is accepted only as an entry of the channels: list or the broker.storage.providers list - it is not a general preprocessor")
			} else {
				l.c.at(n, path, " !include inside an included file: a master file names files and those files name none")
			}
		}
		switch n.kind {
		case mapNode:
			for i, k := range n.keys {
				walk(n.vals[i], joinKey(path, k), false)
			}
		case seqNode:
			listTakesIncludes := master && (path == "channels" || path == "broker.storage.providers")
			for _, item := range n.items {
				walk(item, path, listTakesIncludes)
			}
		}
	}
	walk(n, path, false)
}

func joinKey(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// sortedNames returns the keys of m in order.
func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
