package broker

import "time"

// shareExpiryPeriod is how often backlogs are swept for broker.share.expires_after:
// a tenth of it, never below a second.
func shareExpiryPeriod(expiresAfter time.Duration) time.Duration {
	return max(time.Second, expiresAfter/10)
}

// expireBacklogs drops, from every shared group's backlog, what has waited
// longer than broker.share.expires_after (RFC 0002 "What a shared group is
// owed"), counted as expired: the log lets it go at the next commit
// and a returned row goes with it, so a backlog nobody came for leaves
// nothing in the store. The log is read with no lock held.
func (b *Broker) expireBacklogs(now time.Time) {
	ea := b.opts.ShareExpiresAfter
	b.shares.mu.Lock()
	var groups []*shareGroup
	for _, g := range b.shares.groups {
		if len(g.standIn.owed.entries) > 0 {
			groups = append(groups, g)
		}
	}
	b.shares.mu.Unlock()
	for _, g := range groups {
		for from := uint64(0); ; {
			b.shares.mu.Lock()
			n := len(g.standIn.owed.entries)
			if n > 0 && from == 0 {
				from = g.standIn.owed.entries[0].offset
			}
			b.shares.mu.Unlock()
			if n == 0 {
				break
			}
			got, err := b.bcast.log.ReadFrom(from, 256, nil)
			if err != nil {
				b.storageFailed("reading a shared group's backlog", g.key, err)
				break
			}
			old := map[uint64]bool{}
			young := len(got) == 0
			for i := range got {
				if now.Sub(got[i].Time) >= ea {
					old[got[i].Offset] = true
				} else {
					young = true
				}
			}
			var taken []uint64
			b.shares.mu.Lock()
			o := &g.standIn.owed
			for j := 0; j < len(o.entries); {
				if !old[o.entries[j].offset] {
					j++
					continue
				}
				if o.entries[j].returned {
					taken = append(taken, o.entries[j].offset)
				}
				b.bcast.drop(g.standIn, j)
				b.counters.SharesDroppedExpired.Add(1)
			}
			b.shares.mu.Unlock()
			for _, off := range taken {
				b.takeReturned(g.key, off)
			}
			if young {
				break // receipt times rise with offsets but for clock steps: the rest waits
			}
			from = got[len(got)-1].Offset + 1
		}
	}
}
