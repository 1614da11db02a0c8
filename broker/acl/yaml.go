package acl

import (
	"errors"
	"fmt"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// The file is read into a small tree of its own, as the configuration is, so
// that every refusal names the line it is about and a key nothing reads is
// refused rather than dropped.

type nodeKind uint8

const (
	scalarNode nodeKind = iota
	mapNode
	seqNode
	nullNode
)

type node struct {
	kind   nodeKind
	line   int
	text   string
	keys   []string
	klines []int
	vals   []*node
	items  []*node
}

// maxNodes and maxDepth bound a hostile file; an acl_file is written by hand.
const (
	maxNodes = 1 << 20
	maxDepth = 32
)

type reader struct {
	n   int
	err error
}

func parseYAML(src []byte) (*node, error) {
	f, err := parser.ParseBytes(src, 0)
	if err != nil {
		var located interface {
			GetToken() *token.Token
			GetMessage() string
		}
		if errors.As(err, &located) {
			return nil, lineError{lineOf(located.GetToken()), "is not valid YAML: " + located.GetMessage()}
		}
		msg := err.Error()
		if i := strings.IndexByte(msg, '\n'); i > 0 {
			msg = msg[:i]
		}
		return nil, lineError{0, "is not valid YAML: " + msg}
	}
	if len(f.Docs) > 1 {
		return nil, lineError{0, "holds several YAML documents; an acl_file is one"}
	}
	if len(f.Docs) == 0 || f.Docs[0].Body == nil {
		return &node{kind: nullNode, line: 1}, nil
	}
	r := &reader{}
	n := r.convert(f.Docs[0].Body, 0)
	return n, r.err
}

func lineOf(t *token.Token) int {
	if t == nil || t.Position == nil {
		return 0
	}
	return t.Position.Line
}

func (r *reader) fail(line int, format string, args ...any) *node {
	if r.err == nil {
		r.err = lineError{line, fmt.Sprintf(format, args...)}
	}
	return &node{kind: nullNode, line: line}
}

func (r *reader) convert(n ast.Node, depth int) *node {
	if n == nil {
		return &node{kind: nullNode}
	}
	line := lineOf(n.GetToken())
	if r.n++; r.n > maxNodes {
		return r.fail(line, "is larger than %d nodes", maxNodes)
	}
	if depth > maxDepth {
		return r.fail(line, "is nested more than %d levels deep", maxDepth)
	}
	switch v := n.(type) {
	case *ast.DocumentNode:
		return r.convert(v.Body, depth+1)
	case *ast.MappingNode:
		out := &node{kind: mapNode, line: line}
		for _, mv := range v.Values {
			r.entry(out, mv, depth)
		}
		return out
	case *ast.MappingValueNode:
		out := &node{kind: mapNode, line: lineOf(v.Key.GetToken())}
		r.entry(out, v, depth)
		return out
	case *ast.SequenceNode:
		out := &node{kind: seqNode, line: line}
		for _, item := range v.Values {
			out.items = append(out.items, r.convert(item, depth+1))
		}
		return out
	case *ast.NullNode:
		return &node{kind: nullNode, line: line}
	case *ast.StringNode:
		return &node{kind: scalarNode, line: line, text: v.Value}
	case *ast.LiteralNode:
		return &node{kind: scalarNode, line: line, text: v.Value.Value}
	case *ast.CommentNode, *ast.CommentGroupNode:
		return &node{kind: nullNode, line: line}
	case *ast.AnchorNode, *ast.AliasNode, *ast.MergeKeyNode, *ast.TagNode:
		// Each grant is read from the line it is written on, so that a
		// refusal, and --acl, can point at it.
		return r.fail(line, "uses an anchor, alias, merge key or tag; write each rule out where it applies")
	case ast.ScalarNode:
		text := ""
		if t := v.GetToken(); t != nil {
			text = t.Value
		}
		return &node{kind: scalarNode, line: line, text: text}
	}
	return r.fail(line, "uses a YAML construct an acl_file does not (%s)", n.Type())
}

func (r *reader) entry(out *node, mv *ast.MappingValueNode, depth int) {
	line := lineOf(mv.Key.GetToken())
	key := r.convert(mv.Key, depth+1)
	if key.kind != scalarNode {
		r.fail(line, "a key is a plain name")
		return
	}
	for i, k := range out.keys {
		if k == key.text {
			r.fail(line, "%q is written twice (lines %d and %d)", k, out.klines[i], line)
			return
		}
	}
	val := r.convert(mv.Value, depth+1)
	if val.line == 0 {
		val.line = line
	}
	out.keys = append(out.keys, key.text)
	out.klines = append(out.klines, line)
	out.vals = append(out.vals, val)
}

func (n *node) get(k string) (*node, int, bool) {
	for i, key := range n.keys {
		if key == k {
			return n.vals[i], n.klines[i], true
		}
	}
	return nil, 0, false
}

// lineError is a refusal at a line of the file (0: the file as a whole).
type lineError struct {
	line int
	msg  string
}

func (e lineError) Error() string { return e.msg }
