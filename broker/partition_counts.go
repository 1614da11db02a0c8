package broker

import (
	"log/slog"
	"sync"
)

// partitionCounts finds two subscribers declaring different saguin-filter
// partition counts on one filter string: the one coverage mistake the broker
// can see and so reports, with a line naming both clients (RFC 0003 "What
// this does not build, and what that costs"; checklist A11.20). Filters that
// merely overlap are not compared, as the RFC says. It holds only the
// declarations of subscriptions that exist, so what a client may make it
// hold is bounded by limits.max_subscriptions, and a disagreement is told
// once while it lasts: a pair of counts is reported again only after one of
// them went away and came back.
type partitionCounts struct {
	mu      sync.Mutex // a leaf: taken under shard.mu, nothing taken under it
	filters map[string]*declaredCounts
}

// declaredCounts is one filter's declarations: the clients declaring each
// count, and the pairs of counts already reported.
type declaredCounts struct {
	clients map[uint32]map[string]struct{}
	told    map[[2]uint32]bool
}

// declare records that client's subscription to filter declares count
// (0: it declares none, forgetting an earlier declaration of the same
// filter by client) and logs every pair of counts newly in disagreement.
func (p *partitionCounts) declare(log *slog.Logger, filter, client string, count uint32) {
	p.mu.Lock()
	p.forgetLocked(filter, client)
	if count == 0 {
		p.mu.Unlock()
		return
	}
	if p.filters == nil {
		p.filters = make(map[string]*declaredCounts)
	}
	d := p.filters[filter]
	if d == nil {
		d = &declaredCounts{clients: make(map[uint32]map[string]struct{}), told: make(map[[2]uint32]bool)}
		p.filters[filter] = d
	}
	type clash struct {
		other string
		count uint32
	}
	var clashes []clash
	for c, holders := range d.clients {
		pair := [2]uint32{min(c, count), max(c, count)}
		if c == count || d.told[pair] {
			continue
		}
		d.told[pair] = true
		for other := range holders {
			clashes = append(clashes, clash{other, c})
			break
		}
	}
	if d.clients[count] == nil {
		d.clients[count] = make(map[string]struct{})
	}
	d.clients[count][client] = struct{}{}
	p.mu.Unlock()
	for _, c := range clashes {
		log.Warn("two subscribers declare different saguin-filter partition counts on one filter: some slices may reach nobody, or reach two members",
			"filter", filter, "client_id", client, "partitions", count, "other_client_id", c.other, "other_partitions", c.count)
	}
}

// forget drops client's declaration on filter, if any: its subscription
// went (an UNSUBSCRIBE, its session's end).
func (p *partitionCounts) forget(filter, client string) {
	p.mu.Lock()
	p.forgetLocked(filter, client)
	p.mu.Unlock()
}

func (p *partitionCounts) forgetLocked(filter, client string) {
	d := p.filters[filter]
	if d == nil {
		return
	}
	for c, holders := range d.clients {
		if _, ok := holders[client]; !ok {
			continue
		}
		delete(holders, client)
		if len(holders) == 0 {
			delete(d.clients, c)
			for pair := range d.told {
				if pair[0] == c || pair[1] == c {
					delete(d.told, pair)
				}
			}
		}
	}
	if len(d.clients) == 0 {
		delete(p.filters, filter)
	}
}
