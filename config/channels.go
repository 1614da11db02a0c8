package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/saguin-edge/saguin/codec/topic"
)

// ValidateChannelName applies RFC 0002 "Channel names": a-z, A-Z, 0-9, -, _
// and . only; not . or ..; 1 to 128 bytes; not ending __dlq; and short enough
// that its snapshot file name - every dot percent-encoded, plus .snapshot -
// fits a file system's 255 bytes.
func ValidateChannelName(name string) error {
	if name == "" {
		return fmt.Errorf("a channel name is at least one character")
	}
	if len(name) > maxChannelNameBytes {
		return fmt.Errorf("it is %d bytes and a channel name is at most %d", len(name), maxChannelNameBytes)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf("a channel name holds only a-z, A-Z, 0-9, -, _ and . (the characters a Kafka topic holds), and %q is not one", rune(c))
		}
	}
	if name == "." || name == ".." {
		return fmt.Errorf("%s names a directory rather than a channel in every listing that will hold one", name)
	}
	if strings.HasSuffix(name, topic.DeadLetterSuffix) {
		return fmt.Errorf("a name ending __dlq is reserved for the dead-letter channel a queue derives")
	}
	if n := len(name) + 2*strings.Count(name, ".") + len(snapshotSuffix); n > maxFileNameBytes {
		return fmt.Errorf("its snapshot file name would be %d bytes (each . is written %%2E), over the %d a file name may have; use fewer dots or a shorter name", n, maxFileNameBytes)
	}
	return nil
}

func (l *loader) channels(n *node) {
	seen := map[string]*Channel{}
	var order []*Channel
	for _, g := range l.groups(n, "channels") {
		for i, name := range g.n.keys {
			key := "channels." + name
			if prev, dup := seen[name]; dup {
				l.c.atLine(g.file, g.n.keyLine[i], key, " is defined twice: here and in %s line %d; two domains each defining one name, one silently winning, is the hazard this refuses",
					l.displayOf(prev.ConfiguredIn), prev.Line)
				continue
			}
			if err := ValidateChannelName(name); err != nil {
				l.c.atLine(g.file, g.n.keyLine[i], key, " %q is not a channel name: %v", name, err)
			}
			co := l.c.object(g.n.vals[i], key)
			co.home, co.file = g.n.keyLine[i], g.file
			ch := l.channel(co, name, key)
			ch.ConfiguredIn, ch.Line = g.absFile, g.n.keyLine[i]
			seen[name] = ch
			order = append(order, ch)
		}
	}
	for _, name := range sortedNames(seen) {
		ch := seen[name]
		l.cfg.Channels = append(l.cfg.Channels, *ch)
		if ch.Type == TypeQueue {
			l.cfg.DeadLetters = append(l.cfg.DeadLetters, deadLetterOf(*ch))
		}
	}
}

// deadLetterOf derives <queue>__dlq: an append channel on the queue's provider
// with the queue's dlq_ bounds and the derived filter.
func deadLetterOf(q Channel) Channel {
	d := Channel{
		Name:            topic.DeadLetterName(q.Name),
		Type:            TypeAppend,
		Storage:         q.Storage,
		Start:           StartFloor,
		DerivedFrom:     q.Name,
		ConfiguredIn:    q.ConfiguredIn,
		Line:            q.Line,
		RetentionPeriod: q.dlqRetentionPeriod,
		RetentionBytes:  q.dlqRetentionBytes,
	}
	for _, f := range q.Filters {
		d.Filters = append(d.Filters, topic.DeadLetterFilter(f))
	}
	d.Filter = topic.DeadLetterFilter(q.Filter)
	return d
}

func (l *loader) channel(o *obj, name, key string) *Channel {
	ch := &Channel{Name: name, written: map[string]bool{}}
	for _, k := range []string{"filter", "storage", "retention_period", "retention_bytes", "max_bytes", "deletion_retention_period", "start", "dlq_retention_period", "dlq_retention_bytes"} {
		ch.written[k] = o.has(k)
	}
	ch.Type = o.enum("type", "", TypeAppend, TypeLatest, TypeQueue)
	if !o.has("type") && !o.notMapping {
		o.at("type", " is missing: a channel is append, latest or queue; a topic no channel claims is broadcast, and there is no type: broadcast")
	}
	st := l.cfg.Broker.Storage
	ch.Storage = st.Default
	if s, ok := o.str("storage"); ok {
		ch.Storage = s
	}
	l.filter(o, ch, key)

	period := durSpec{min: time.Second, none: true}
	bytes := sizeSpec{min: 1, none: true}
	ch.RetentionPeriod, ch.RetentionBytes = st.DefaultRetentionPeriod, st.DefaultRetentionBytes
	if ch.Type != TypeQueue {
		ch.RetentionPeriod = o.duration("retention_period", st.DefaultRetentionPeriod, period)
	} else {
		o.refuse("retention_period", " is refused on a queue: deleting unacknowledged work by age is eviction of unresolved work, which is never permitted (invariant 2); a queue takes max_bytes, which refuses new work instead")
		ch.RetentionPeriod = 0
	}
	if ch.Type == TypeAppend {
		ch.RetentionBytes = o.size("retention_bytes", st.DefaultRetentionBytes, bytes)
	} else {
		ch.RetentionBytes = 0
		if ch.Type == TypeLatest {
			o.refuse("retention_bytes", " is refused on a latest channel: it holds one value per topic, so what grows is the number of topics and the tool for a quiet one is retention_period")
		} else {
			o.refuse("retention_bytes", " is refused on a queue: deleting unacknowledged work to stay under a size is eviction of unresolved work (invariant 2); max_bytes refuses new work instead")
		}
	}
	if ch.Type == TypeLatest {
		o.refuse("max_bytes", " is refused on a latest channel: it holds one value per topic, and its provider's max_bytes bounds it")
	} else {
		ch.MaxBytes = o.size("max_bytes", 0, bytes)
	}
	if ch.Type == TypeLatest {
		ch.DeletionRetentionPeriod = o.duration("deletion_retention_period", Day, period)
	} else {
		o.refuse("deletion_retention_period", " applies to a latest channel only: it is how long a deletion is kept for a bridge mirroring the channel")
	}
	if ch.Type == TypeAppend {
		ch.Start = o.enum("start", StartFloor, StartFloor, StartTail)
	} else {
		o.refuse("start", " is an append channel's key and is refused on a %s channel rather than accepted and ignored: a latest subscriber is always served current state, and a queue has no per-consumer position", ch.Type)
	}
	if ch.Type == TypeQueue {
		l.queue(o, ch, key)
	} else {
		for _, k := range []string{"visibility_timeout", "job_expires_after", "retry"} {
			o.refuse(k, " is a queue's key and is refused on a %s channel", ch.Type)
		}
		for _, k := range []string{"dlq_retention_period", "dlq_retention_bytes"} {
			o.refuse(k, " is refused on a %s channel: only a queue derives a dead-letter channel", ch.Type)
		}
	}
	o.done()
	return ch
}

func (l *loader) queue(o *obj, ch *Channel, key string) {
	st := l.cfg.Broker.Storage
	ch.DeadLetter = topic.DeadLetterName(ch.Name)
	ch.JobExpiresAfter = o.duration("job_expires_after", 0, durSpec{min: time.Second, none: true})
	ch.VisibilityTimeout = o.duration("visibility_timeout", 30*time.Second, durSpec{min: time.Second})
	if ch.JobExpiresAfter > 0 && ch.VisibilityTimeout >= ch.JobExpiresAfter {
		o.at("visibility_timeout", " %s is not less than job_expires_after (%s): a job would expire before its first lease ran out; lower visibility_timeout or raise job_expires_after",
			FormatDuration(ch.VisibilityTimeout), FormatDuration(ch.JobExpiresAfter))
	}
	r := o.child("retry")
	ch.Retry.MaxAttempts = int(r.integer("max_attempts", 5, intSpec{min: 1, max: 1 << 20, why: "a job is attempted at least once"}))
	ch.Retry.Backoff = r.enum("backoff", BackoffNone, BackoffNone, BackoffLinear, BackoffExponential)
	ch.Retry.BackoffBase = r.duration("backoff_base", 0, durSpec{min: time.Second})
	shaped := ch.Retry.Backoff == BackoffLinear || ch.Retry.Backoff == BackoffExponential
	switch {
	case shaped && !r.has("backoff_base"):
		r.at("backoff", " %s is written without retry.backoff_base: a shape with no base has no gap to build from; write both or neither", ch.Retry.Backoff)
	case r.has("backoff_base") && !r.has("backoff"):
		r.at("backoff_base", " is written without retry.backoff: a base with no shape is read by nothing; write both or neither")
	case r.has("backoff_base") && ch.Retry.Backoff == BackoffNone:
		r.at("backoff_base", " is written beside retry.backoff: none, which reads no base; write linear or exponential, or remove the base")
	}
	r.done()
	ch.dlqRetentionPeriod = o.duration("dlq_retention_period", st.DefaultRetentionPeriod, durSpec{min: time.Second, none: true})
	ch.dlqRetentionBytes = o.size("dlq_retention_bytes", st.DefaultRetentionBytes, sizeSpec{min: 1, none: true})
}

// filter reads and checks a channel's filter: every RFC 0002 rule on a
// channel's filter, on the written form and on each spelling it expands to.
func (l *loader) filter(o *obj, ch *Channel, key string) {
	written, ok := o.str("filter")
	if !ok {
		if o.has("filter") {
			return
		}
		written = ch.Name + "/#"
	}
	ch.Filter = written
	where := "filter"
	report := func(format string, args ...any) {
		if ok {
			o.at(where, format, args...)
		} else {
			// A channel writing no filter is checked as though it had
			// written <name>/#.
			o.at("type", format, args...)
		}
	}
	if topic.HasBraces(written) && ch.Type == TypeQueue {
		report(" %q: a queue's filter carries no {a,b} - its workers pin one exact string, and two strings would be two consumer groups each taking a copy of every job (invariant 4)", written)
		return
	}
	expanded, err := topic.Expand(written)
	if err != nil {
		report(" %q: %v", written, err)
		return
	}
	lim := l.cfg.Broker.Limits
	for _, f := range expanded {
		if err := topic.ValidateFilter(f); err != nil {
			report(" %q is not a topic filter MQTT would accept: %v", f, err)
			return
		}
		first := topic.FirstLevel(f)
		if first == "+" || first == "#" || strings.HasPrefix(first, "$") {
			report(" %q: a channel's filter spells its first level out and does not begin with $ - a wildcard there would claim $SYS/ and $saguin/, the broker's own control topics, along with everything else", f)
			return
		}
		if topic.HasLevel(f, topic.DeadLetterLevel) {
			report(" %q carries a level named __dlq, which is reserved: every filter that has one is one the broker derived for a queue's dead letters", f)
			return
		}
		if n := topic.Levels(f); n > lim.MaxTopicLevels {
			report(" %q has %d levels, more than limits.max_topic_levels (%d), so it could match nothing a client may publish", f, n, lim.MaxTopicLevels)
			return
		}
		if fixed := minTopicLength(f); fixed > lim.MaxTopicLength || topic.IsWildcard(f) && fixed >= lim.MaxTopicLength {
			report(" %q leaves no room for a topic under limits.max_topic_length (%d): no publish could carry a topic it claims", f, lim.MaxTopicLength)
			return
		}
	}
	ch.Filters = expanded
}

// minTopicLength is the length of the shortest topic a filter matches: each +
// standing for an empty level, a trailing # for no level at all.
func minTopicLength(f string) int {
	if strings.HasSuffix(f, "/#") {
		f = f[:len(f)-2]
	}
	return len(f) - strings.Count(f, "+")
}
