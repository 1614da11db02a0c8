package codec

// Decoded packets alias the read buffer. What outlives the next read - a
// message queued for a subscriber, a retained value, a session's Will - is
// copied with Clone, which gathers every aliased byte into one allocation
// (plus one for each list), so a kept message costs a fixed number of
// allocations whatever its properties.

// Clone returns a deep copy of p that shares nothing with the buffer p was
// decoded from.
func (p *Publish) Clone() *Publish {
	c := *p
	arena := make([]byte, 0, len(p.Topic)+len(p.Payload)+p.Properties.aliasedLen())
	c.Topic, arena = keep(arena, p.Topic)
	c.Payload, arena = keep(arena, p.Payload)
	c.Properties.cloneFrom(&p.Properties, arena)
	return &c
}

// Clone returns a deep copy of p that shares nothing with the buffer p was
// decoded from.
func (p *Connect) Clone() *Connect {
	c := *p
	n := len(p.ClientID) + len(p.WillTopic) + len(p.WillPayload) + len(p.Username) + len(p.Password) +
		p.Properties.aliasedLen() + p.WillProperties.aliasedLen()
	arena := make([]byte, 0, n)
	c.ClientID, arena = keep(arena, p.ClientID)
	c.WillTopic, arena = keep(arena, p.WillTopic)
	c.WillPayload, arena = keep(arena, p.WillPayload)
	c.Username, arena = keep(arena, p.Username)
	c.Password, arena = keep(arena, p.Password)
	arena = c.Properties.cloneFrom(&p.Properties, arena)
	c.WillProperties.cloneFrom(&p.WillProperties, arena)
	return &c
}

// keep copies b to the end of arena (which has room) and returns the copy,
// nil staying nil so that a cloned packet compares equal to its original.
func keep(arena, b []byte) ([]byte, []byte) {
	if b == nil {
		return nil, arena
	}
	start := len(arena)
	arena = append(arena, b...)
	return arena[start:len(arena):len(arena)], arena
}

// aliasedLen is how many bytes of p's fields alias a packet.
func (p *Properties) aliasedLen() int {
	n := len(p.ContentType) + len(p.ResponseTopic) + len(p.CorrelationData) + len(p.AssignedClientID) +
		len(p.AuthMethod) + len(p.AuthData) + len(p.ResponseInfo) + len(p.ServerReference) + len(p.ReasonString)
	for _, u := range p.User {
		n += len(u.Key) + len(u.Value)
	}
	return n
}

// cloneFrom makes p (a shallow copy of src) a deep one, copying aliased
// bytes into arena, and returns what is left of arena.
func (p *Properties) cloneFrom(src *Properties, arena []byte) []byte {
	p.ContentType, arena = keep(arena, src.ContentType)
	p.ResponseTopic, arena = keep(arena, src.ResponseTopic)
	p.CorrelationData, arena = keep(arena, src.CorrelationData)
	p.AssignedClientID, arena = keep(arena, src.AssignedClientID)
	p.AuthMethod, arena = keep(arena, src.AuthMethod)
	p.AuthData, arena = keep(arena, src.AuthData)
	p.ResponseInfo, arena = keep(arena, src.ResponseInfo)
	p.ServerReference, arena = keep(arena, src.ServerReference)
	p.ReasonString, arena = keep(arena, src.ReasonString)
	p.SubscriptionIDs = nil
	if src.SubscriptionIDs != nil {
		p.SubscriptionIDs = append(make([]uint32, 0, len(src.SubscriptionIDs)), src.SubscriptionIDs...)
	}
	p.User = nil
	if src.User != nil {
		p.User = make([]UserProperty, len(src.User))
		for i, u := range src.User {
			p.User[i].Key, arena = keep(arena, u.Key)
			p.User[i].Value, arena = keep(arena, u.Value)
		}
	}
	return arena
}
