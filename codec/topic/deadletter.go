package topic

import "strings"

// DeadLetterName is the name of the append channel a queue named queue derives.
func DeadLetterName(queue string) string {
	return queue + DeadLetterSuffix
}

// DeadLetterFilter derives a dead-letter channel's filter from its queue's:
// __dlq is inserted where the queue's filter carries its #, or appended where it
// carries none (RFC 0002 "The dead-letter channel"). jobs/# gives jobs/__dlq/#.
func DeadLetterFilter(queueFilter string) string {
	if queueFilter == "#" {
		return DeadLetterLevel + "/#"
	}
	if strings.HasSuffix(queueFilter, "/#") {
		return queueFilter[:len(queueFilter)-1] + DeadLetterLevel + "/#"
	}
	return queueFilter + string(Separator) + DeadLetterLevel
}

// DeadLetterTopic derives the topic a dead-lettered record takes from the
// topic it had and its queue's filter, which must match it. The + levels keep
// what they captured because one level is inserted and nothing else moves:
// iot/water/w-7/inspect under iot/water/+/inspect becomes
// iot/water/w-7/inspect/__dlq, and jobs/a/b under jobs/# becomes jobs/__dlq/a/b.
func DeadLetterTopic(queueFilter, topic string) string {
	if queueFilter != "#" && !strings.HasSuffix(queueFilter, "/#") {
		return topic + string(Separator) + DeadLetterLevel
	}
	// The # stands at level n-1 of the filter: the topic's first n-1 levels are
	// the ones before it, and __dlq goes after them.
	before := Levels(queueFilter) - 1
	if before == 0 {
		return DeadLetterLevel + string(Separator) + topic
	}
	i := 0
	for k := 0; k < before; k++ {
		j := strings.IndexByte(topic[i:], Separator)
		if j < 0 {
			// The # matched no level: jobs under jobs/#.
			return topic + string(Separator) + DeadLetterLevel
		}
		i += j + 1
	}
	return topic[:i] + DeadLetterLevel + string(Separator) + topic[i:]
}
