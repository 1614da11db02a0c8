package broker

import (
	channelrules "github.com/saguin-edge/saguin/broker/channel"
	"sync"
)

// subscription is one filter a session holds, with its options.
type subscription struct {
	qos               byte
	noLocal           bool
	retainAsPublished bool
	retainHandling    byte
	id                uint32 // Subscription Identifier; 0 none
	// logOffset is the broadcast log's next offset when the filter was
	// granted: a later subscription does not reach back into the log.
	logOffset uint64
	// part is the SUBSCRIBE's declared slice (saguin-filter), nil for
	// none: a message outside it is not delivered to this subscription,
	// live or from the retained store (RFC 0003 "Where it applies").
	part *channelrules.Partition
	// read is the acl_file's answer for the whole filter, kept across the
	// copies of this value (nil on a shared group's or a queue's form).
	read *readGrant
}

// index is the subscription index: a tree of filter levels whose nodes hold
// the sessions subscribed at exactly that filter. It is read on every publish
// and written on SUBSCRIBE and UNSUBSCRIBE, so a read-write lock lets
// publishers match in parallel.
type index struct {
	mu   sync.RWMutex
	root node
}

type node struct {
	children map[string]*node
	subs     map[*session]subscription
}

// add places s at filter, replacing the options it held there.
func (x *index) add(filter string, s *session, sub subscription) {
	x.mu.Lock()
	defer x.mu.Unlock()
	n := &x.root
	forLevels(filter, func(level string) {
		if n.children == nil {
			n.children = make(map[string]*node)
		}
		c := n.children[level]
		if c == nil {
			c = &node{}
			n.children[level] = c
		}
		n = c
	})
	if n.subs == nil {
		n.subs = make(map[*session]subscription)
	}
	n.subs[s] = sub
}

// remove takes s off filter, pruning nodes left empty.
func (x *index) remove(filter string, s *session) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.root.remove(filter, s)
}

func (n *node) remove(filter string, s *session) {
	level, rest, last := cutLevel(filter)
	c := n.children[level]
	if c == nil {
		return
	}
	if last {
		delete(c.subs, s)
	} else {
		c.remove(rest, s)
	}
	if len(c.subs) == 0 && len(c.children) == 0 {
		delete(n.children, level)
	}
}

// match calls fn for every subscription whose filter matches topic. A topic
// beginning with $ is not matched by a filter beginning with a wildcard
// (MQTT-4.7.2-1). fn runs under the read lock and must not block.
func (x *index) match(topic []byte, fn func(*session, subscription)) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	dollar := len(topic) > 0 && topic[0] == '$'
	x.root.match(topic, 0, true, dollar, fn)
}

// match walks the levels of topic from start; first marks the topic's first
// level, where $ topics refuse wildcards.
func (n *node) match(topic []byte, start int, first, dollar bool, fn func(*session, subscription)) {
	if n.children == nil {
		return
	}
	wild := !(first && dollar)
	if wild {
		// # matches the rest, including nothing at all (parent level).
		if c := n.children["#"]; c != nil {
			for s, sub := range c.subs {
				fn(s, sub)
			}
		}
	}
	end := start
	for end < len(topic) && topic[end] != '/' {
		end++
	}
	last := end >= len(topic)
	step := func(c *node) {
		if last {
			for s, sub := range c.subs {
				fn(s, sub)
			}
			// A filter a/# matches a: the child's # stands for nothing.
			if h := c.children["#"]; h != nil {
				for s, sub := range h.subs {
					fn(s, sub)
				}
			}
			return
		}
		c.match(topic, end+1, false, dollar, fn)
	}
	if c := n.children[string(topic[start:end])]; c != nil {
		step(c)
	}
	if wild {
		if c := n.children["+"]; c != nil {
			step(c)
		}
	}
}

// forLevels calls fn with each level of a filter or topic, in order.
func forLevels(s string, fn func(string)) {
	for {
		level, rest, last := cutLevel(s)
		fn(level)
		if last {
			return
		}
		s = rest
	}
}

// cutLevel splits the first level off s.
func cutLevel(s string) (level, rest string, last bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			return s[:i], s[i+1:], false
		}
	}
	return s, "", true
}
