// Package topic holds MQTT topic names and topic filters: their syntax, matching,
// the {a,b} brace notation of the configuration file, the "most exact filter holds
// the topic" rule (RFC 0002 "Which channel a topic belongs to") and the dead-letter
// derivation (RFC 0002 "The dead-letter channel").
//
// It is a leaf shared by config, broker and bridge so that --route, --check-config
// and the running broker answer every placement question with the same code.
// Nothing here allocates on the matching path: Match, Levels and Table.Lookup take
// strings and index into them.
package topic

import (
	"errors"
	"strings"
)

// Errors returned by the validators. Each names the MQTT rule it applies so a
// caller can say which rule a string broke and answer with the right code.
var (
	ErrEmpty          = errors.New("a topic or filter is at least one character long (MQTT-4.7.3-1)")
	ErrNul            = errors.New("a topic or filter holds no U+0000 (MQTT-4.7.3-2)")
	ErrWildcardInName = errors.New("a topic name holds no + or # (MQTT-4.7.0-1)")
	ErrPlusNotLevel   = errors.New("+ takes a whole level of a filter (MQTT-4.7.1-2)")
	ErrHashNotLevel   = errors.New("# takes a whole level of a filter (MQTT-4.7.1-1)")
	ErrHashNotLast    = errors.New("# is only ever the last level of a filter (MQTT-4.7.1-1)")
)

// Separator divides the levels of a topic or a filter.
const Separator = '/'

// The names RFC 0002 reserves, written once: the broker, config, the stores
// and netloop test topics and filters against these, never against literals.
const (
	// DeadLetterLevel is the level a dead-letter channel's filter and topics
	// gain, and which no filter an operator writes may carry (RFC 0002).
	DeadLetterLevel = "__dlq"
	// DeadLetterSuffix ends the name of the append channel a queue derives.
	DeadLetterSuffix = "__dlq"
	// SaguinPrefix begins the reserved space no client publishes to and only
	// a queue's form and a seek reply are delivered from ("$saguin" alone is
	// reserved too: SaguinRoot).
	SaguinPrefix = "$saguin/"
	// SaguinRoot is the reserved space's first level.
	SaguinRoot = "$saguin"
	// QueuePrefix begins a queue's subscription form, $saguin/queue/<name>.
	QueuePrefix = "$saguin/queue/"
	// SysPrefix begins the $SYS tree: no client publishes there and nothing
	// is delivered from it. A prefix of the first level, as MQTT treats it.
	SysPrefix = "$SYS"
	// SharePrefix begins every shared subscription, in MQTT's own lower case.
	SharePrefix = "$share/"
)

// ValidateName checks a topic name as a PUBLISH carries it: non-empty, no NUL,
// no wildcard. Length and level limits are the broker's configuration, not
// syntax, and are checked by the caller (see Levels).
func ValidateName(name string) error {
	if name == "" {
		return ErrEmpty
	}
	for i := 0; i < len(name); i++ {
		switch name[i] {
		case 0:
			return ErrNul
		case '+', '#':
			return ErrWildcardInName
		}
	}
	return nil
}

// ValidateFilter checks a topic filter as a SUBSCRIBE carries it: non-empty, no
// NUL, + and # each a whole level, # last. It does not know $share: a shared
// subscription is split first (SplitShared) and its inner filter checked here.
func ValidateFilter(filter string) error {
	if filter == "" {
		return ErrEmpty
	}
	for i := 0; i < len(filter); i++ {
		c := filter[i]
		switch c {
		case 0:
			return ErrNul
		case '+', '#':
			if i > 0 && filter[i-1] != Separator || i+1 < len(filter) && filter[i+1] != Separator {
				if c == '+' {
					return ErrPlusNotLevel
				}
				return ErrHashNotLevel
			}
			if c == '#' && i+1 != len(filter) {
				return ErrHashNotLast
			}
		}
	}
	return nil
}

// Levels counts the levels of a topic or a filter: one more than its separators,
// so "a" is 1, "a/b" is 2 and "a/" is 2 (limits.max_topic_levels).
func Levels(s string) int {
	return strings.Count(s, string(Separator)) + 1
}

// HasLevel reports whether one level of s is exactly level.
func HasLevel(s, level string) bool {
	for i := 0; ; {
		l, next, last := nextLevel(s, i)
		if l == level {
			return true
		}
		if last {
			return false
		}
		i = next
	}
}

// IsWildcard reports whether a filter holds + or # anywhere, that is whether it
// can match more than one topic name.
func IsWildcard(filter string) bool {
	return strings.ContainsAny(filter, "+#")
}

// FirstLevel returns the first level of a topic or filter.
func FirstLevel(s string) string {
	if i := strings.IndexByte(s, Separator); i >= 0 {
		return s[:i]
	}
	return s
}

// SplitShared splits "$share/<ShareName>/<filter>" into its group and filter.
// ok is false for anything that does not begin with SharePrefix; err reports a
// shared subscription that is not shaped as MQTT 5 section 4.8.2 says - an empty
// ShareName, one holding + or #, a filter that is missing or invalid - or
// whose filter begins $share again.
func SplitShared(s string) (group, filter string, ok bool, err error) {
	if !strings.HasPrefix(s, SharePrefix) {
		return "", "", false, nil
	}
	rest := s[len(SharePrefix):]
	slash := strings.IndexByte(rest, Separator)
	if slash < 0 {
		return "", "", true, errors.New("a shared subscription is $share/<ShareName>/<filter> and this one has no filter (MQTT 5 4.8.2)")
	}
	group, filter = rest[:slash], rest[slash+1:]
	if group == "" {
		return "", "", true, errors.New("a shared subscription's ShareName is at least one character (MQTT 5 4.8.2)")
	}
	if strings.ContainsAny(group, "+#") {
		return "", "", true, errors.New("a shared subscription's ShareName holds no + or # (MQTT 5 4.8.2)")
	}
	if err := ValidateFilter(filter); err != nil {
		return "", "", true, err
	}
	if len(filter) >= 6 && strings.EqualFold(filter[:6], "$share") {
		// It could match only topics under $share/, which nothing can
		// publish to (RFC 0002 "Shared subscriptions").
		return "", "", true, errors.New("a shared subscription's filter does not begin $share again, in any case")
	}
	return group, filter, true, nil
}

// nextLevel returns the level of s that starts at i, the index the level after
// it starts at, and whether it is the last level. i must be at most len(s).
func nextLevel(s string, i int) (level string, next int, last bool) {
	if j := strings.IndexByte(s[i:], Separator); j >= 0 {
		return s[i : i+j], i + j + 1, false
	}
	return s[i:], len(s), true
}
