package config

import (
	"fmt"
	"sort"
	"strings"
)

// Finding is one thing wrong with a configuration (or, in Config.Notes, one
// thing worth saying about it): the key path, the file and line it is on, and
// a message in the voice RFC 0002's examples use - what was written, what is
// accepted, what to write instead.
type Finding struct {
	Key  string
	File string
	Line int
	// Column is where on the line the key or value starts, 0 where the
	// finding is about something absent.
	Column  int
	Message string
}

// String renders the finding as --check-config prints it under its file.
func (f Finding) String() string {
	var b strings.Builder
	b.WriteString(f.Key)
	if f.Key != "" && !strings.HasPrefix(f.Message, " ") && !strings.HasPrefix(f.Message, ":") {
		b.WriteString(": ")
	}
	b.WriteString(strings.TrimPrefix(f.Message, func() string {
		if f.Key == "" {
			return " "
		}
		return ""
	}()))
	if f.File != "" {
		b.WriteString(" (")
		b.WriteString(f.File)
		if f.Line > 0 {
			fmt.Fprintf(&b, ":%d", f.Line)
		}
		b.WriteString(")")
	}
	return b.String()
}

// Error is every finding a configuration produced, reported together.
type Error struct {
	Findings []Finding
}

// Error renders the findings grouped by file, in file and line order, under
// "configuration is invalid:".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("configuration is invalid:\n")
	writeGrouped(&b, e.Findings)
	return strings.TrimRight(b.String(), "\n")
}

// writeGrouped writes findings under a line per file, the layout RFC 0002's
// example messages use.
func writeGrouped(b *strings.Builder, list []Finding) {
	sorted := append([]Finding(nil), list...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].File != sorted[j].File {
			return sorted[i].File < sorted[j].File
		}
		return sorted[i].Line < sorted[j].Line
	})
	file := "\x00"
	for _, f := range sorted {
		if f.File != file {
			file = f.File
			if file == "" {
				b.WriteString("(configuration):\n")
			} else {
				b.WriteString(file + ":\n")
			}
		}
		b.WriteString("  - " + f.String() + "\n")
	}
}

// collector gathers findings as the loader goes, so that every one is reported
// rather than only the first.
type collector struct {
	list []Finding
	// pos remembers where each key read was written, for the findings that
	// relate one key to another and are made after the tree is gone.
	pos map[string]Finding
}

// atKey reports a finding about a key by its path, at the place the key was
// written (or the file's top when it was not).
func (c *collector) atKey(fallbackFile, key, format string, args ...any) {
	p, ok := c.pos[key]
	if !ok {
		p = Finding{File: fallbackFile}
	}
	c.list = append(c.list, Finding{Key: key, File: p.File, Line: p.Line, Column: p.Column, Message: fmt.Sprintf(format, args...)})
}

func (c *collector) at(n *node, key, format string, args ...any) {
	f := Finding{Key: key, Message: fmt.Sprintf(format, args...)}
	if n != nil {
		f.File, f.Line, f.Column = n.file, n.line, n.col
	}
	c.list = append(c.list, f)
}

func (c *collector) atLine(file string, line int, key, format string, args ...any) {
	c.list = append(c.list, Finding{Key: key, File: file, Line: line, Message: fmt.Sprintf(format, args...)})
}
