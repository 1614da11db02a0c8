package config

import (
	"errors"
	"fmt"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// The loader reads YAML into a small tree of its own rather than decoding into
// structs, because every finding has to name the file and the line of the node
// it is about, and a key the schema does not define has to be found rather than
// silently dropped.

type nodeKind int

const (
	scalarNode nodeKind = iota
	mapNode
	seqNode
	nullNode
)

type node struct {
	kind nodeKind
	file string
	line int
	col  int
	// tag is the node's explicit tag ("!include"), empty when it has none.
	tag string

	// Scalars: the text as written, and whether it was quoted (a quoted 5 is
	// the string "5", an unquoted one YAML's integer).
	text   string
	quoted bool

	// Mappings, in document order.
	keys    []string
	keyLine []int
	keyCol  []int
	vals    []*node

	items []*node

	// size counts this node and everything under it, aliases expanded, so
	// that a document whose aliases multiply (a billion laughs) is refused
	// before anything walks it.
	size int
}

func (n *node) describe() string {
	switch n.kind {
	case mapNode:
		return "a mapping"
	case seqNode:
		return "a list"
	case nullNode:
		return "empty"
	}
	return fmt.Sprintf("%q", n.text)
}

// maxDocumentBytes bounds a configuration file (and each included file) before
// it is read into memory: a configuration is written by hand, and a file this
// large is a mistake rather than a configuration (invariant 13).
const maxDocumentBytes = 16 << 20

// parseDocument parses one YAML document into the tree. Anchors and aliases are
// resolved; a merge key (<<) is refused, because it makes a key's value come
// from somewhere other than the line a finding would name.
func parseDocument(file string, src []byte) (*node, error) {
	f, err := parser.ParseBytes(src, 0)
	if err != nil {
		// goccy's errors carry the token they stopped at.
		var located interface {
			GetToken() *token.Token
			GetMessage() string
		}
		if errors.As(err, &located) {
			return nil, &docError{file, lineOf(located.GetToken()), "is not valid YAML: " + located.GetMessage()}
		}
		return nil, &docError{file, 0, "is not valid YAML: " + strings.TrimSpace(yamlErrorText(err))}
	}
	if len(f.Docs) > 1 {
		return nil, &docError{file, 0, fmt.Sprintf("holds %d YAML documents; a configuration file is one document", len(f.Docs))}
	}
	c := converter{file: file, anchors: map[string]*node{}}
	if len(f.Docs) == 0 || f.Docs[0].Body == nil {
		return &node{kind: nullNode, file: file, line: 1}, nil
	}
	n := c.convert(f.Docs[0].Body, 0)
	if c.err != nil {
		return nil, c.err
	}
	return n, nil
}

func yamlErrorText(err error) string {
	// goccy's errors carry a source excerpt after the first line; the first
	// line has the position and the reason, which is what a finding needs.
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i > 0 {
		return s[:i]
	}
	return s
}

type converter struct {
	file    string
	anchors map[string]*node
	err     error
}

// maxNodes bounds the expanded size of a document: far above any
// configuration, far below what would exhaust memory or time walking it.
const maxNodes = 1 << 20

// maxDepth bounds recursion over a hostile document; no key of the schema
// nests more than a handful of levels.
const maxDepth = 64

// docError is a document that cannot be read as YAML at all, at a line.
type docError struct {
	file string
	line int
	msg  string
}

func (e *docError) Error() string { return fmt.Sprintf("%s:%d: %s", e.file, e.line, e.msg) }

func (c *converter) fail(line int, format string, args ...any) *node {
	if c.err == nil {
		c.err = &docError{c.file, line, fmt.Sprintf(format, args...)}
	}
	return &node{kind: nullNode, file: c.file, line: line}
}

func lineOf(t *token.Token) int {
	if t == nil || t.Position == nil {
		return 0
	}
	return t.Position.Line
}

func colOf(t *token.Token) int {
	if t == nil || t.Position == nil {
		return 0
	}
	return t.Position.Column
}

func (c *converter) convert(n ast.Node, depth int) *node {
	out := c.convertNode(n, depth)
	if out.col == 0 && n != nil {
		out.col = colOf(n.GetToken())
	}
	if _, alias := n.(*ast.AliasNode); alias || out.size > 0 {
		// An alias shares its anchor's node, whose size is already counted
		// once; counting it again is what bounds the expansion.
		if out.size > maxNodes-1 {
			return c.fail(out.line, "aliases expand this document past %d nodes", maxNodes)
		}
		return out
	}
	out.size = 1
	for _, v := range out.vals {
		out.size += v.size
	}
	for _, v := range out.items {
		out.size += v.size
	}
	if out.size > maxNodes {
		return c.fail(out.line, "aliases expand this document past %d nodes", maxNodes)
	}
	return out
}

func (c *converter) convertNode(n ast.Node, depth int) *node {
	if n == nil {
		return &node{kind: nullNode, file: c.file}
	}
	line := lineOf(n.GetToken())
	if depth > maxDepth {
		return c.fail(line, "nested more than %d levels deep", maxDepth)
	}
	switch v := n.(type) {
	case *ast.DocumentNode:
		return c.convert(v.Body, depth+1)
	case *ast.MappingNode:
		out := &node{kind: mapNode, file: c.file, line: line}
		for _, mv := range v.Values {
			c.entry(out, mv, depth)
		}
		return out
	case *ast.MappingValueNode:
		out := &node{kind: mapNode, file: c.file, line: lineOf(v.Key.GetToken())}
		c.entry(out, v, depth)
		return out
	case *ast.SequenceNode:
		out := &node{kind: seqNode, file: c.file, line: line}
		for _, item := range v.Values {
			out.items = append(out.items, c.convert(item, depth+1))
		}
		return out
	case *ast.TagNode:
		inner := c.convert(v.Value, depth+1)
		inner.tag = v.Start.Value
		if inner.line == 0 {
			inner.line = line
		}
		return inner
	case *ast.AnchorNode:
		inner := c.convert(v.Value, depth+1)
		c.anchors[v.Name.String()] = inner
		return inner
	case *ast.AliasNode:
		name := v.Value.String()
		target, ok := c.anchors[name]
		if !ok {
			return c.fail(line, "alias *%s names no anchor defined before it", name)
		}
		return target
	case *ast.NullNode:
		return &node{kind: nullNode, file: c.file, line: line}
	case *ast.LiteralNode:
		return &node{kind: scalarNode, file: c.file, line: line, text: v.Value.Value, quoted: true}
	case *ast.StringNode:
		t := v.GetToken()
		quoted := t != nil && (t.Type == token.DoubleQuoteType || t.Type == token.SingleQuoteType)
		return &node{kind: scalarNode, file: c.file, line: line, text: v.Value, quoted: quoted}
	case *ast.MergeKeyNode:
		return c.fail(line, "a merge key (<<) is not accepted here: write the keys out, so that each finding can name the line it is on")
	case *ast.CommentNode, *ast.CommentGroupNode:
		return &node{kind: nullNode, file: c.file, line: line}
	case ast.ScalarNode:
		// Integers, floats, booleans, infinities: kept as written, typed by the
		// key that reads them.
		t := v.GetToken()
		text := ""
		if t != nil {
			text = t.Value
		}
		return &node{kind: scalarNode, file: c.file, line: line, text: text}
	}
	return c.fail(line, "a YAML construct this configuration does not use (%s)", n.Type())
}

func (c *converter) entry(out *node, mv *ast.MappingValueNode, depth int) {
	if _, merge := mv.Key.(*ast.MergeKeyNode); merge {
		c.fail(lineOf(mv.Key.GetToken()), "a merge key (<<) is not accepted here: write the keys out, so that each finding can name the line it is on")
		return
	}
	key := c.convert(mv.Key, depth+1)
	line := lineOf(mv.Key.GetToken())
	if key.kind != scalarNode {
		c.fail(line, "a key is a plain name, not %s", key.describe())
		return
	}
	for i, k := range out.keys {
		if k == key.text {
			c.fail(line, "key %q is written twice in one mapping (lines %d and %d)", k, out.keyLine[i], line)
			return
		}
	}
	out.keys = append(out.keys, key.text)
	out.keyLine = append(out.keyLine, line)
	out.keyCol = append(out.keyCol, colOf(mv.Key.GetToken()))
	val := c.convert(mv.Value, depth+1)
	if val.line == 0 {
		val.line = line
	}
	out.vals = append(out.vals, val)
}
