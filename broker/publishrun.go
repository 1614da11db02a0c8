package broker

import (
	"github.com/saguin-edge/saguin/broker/engine"
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop"
	"github.com/saguin-edge/saguin/netloop/delivery"
)

// PublishRun implements netloop.RunPublisher: a run of one connection's QoS 1
// publishes, answered in order. Each is admitted as Publish admits it; the
// consecutive ones an engine that stores runs (engine.RunPublisher) takes go
// to it in one call, so their records share the provider's commit, and every
// other publish is routed alone, in its place. A publish to one of the
// broker's own topics ($saguin/..., answered in admitPublish) or to another
// engine ends the stretch before it is admitted, so nothing it does runs
// ahead of the records before it.
func (b *Broker) PublishRun(c delivery.Client, ps []*codec.Publish, codes []codec.ReasonCode, whys []string) {
	id := c.ClientID()
	var stretch [maxRunStretch]int // indexes into ps of the stretch being gathered
	for i := 0; i < len(ps); {
		eng, code, why := b.admitPublish(c, ps[i], nil)
		if eng == nil {
			codes[i], whys[i] = code, why
			i++
			continue
		}
		re, ok := eng.(engine.RunPublisher)
		if !ok {
			codes[i], whys[i] = eng.Publish(id, ps[i])
			b.countEngineRefusal(codes[i])
			i++
			continue
		}
		n := 0
		stretch[n], n = i, n+1
		j := i + 1
		for ; j < len(ps) && n < len(stretch) && b.plainFor(ps[j], eng); j++ {
			// plainFor found eng its route: admitted without a second look-up.
			e2, code, why := b.admitPublish(c, ps[j], eng)
			if e2 == nil {
				codes[j], whys[j] = code, why // refused in its place, stored nowhere
				continue
			}
			stretch[n], n = j, n+1
		}
		b.publishStretch(re, id, ps, stretch[:n], codes, whys)
		i = j
	}
}

// maxRunStretch is the most publishes handed to an engine in one call; a run
// is at most this long already (netloop's bound on a run).
const maxRunStretch = 256

// plainFor reports, before admitting p, whether it would go to eng by the
// ordinary path: none of the broker's own topics (they all begin with $,
// like $SYS, which checkTopic refuses) and not QoS 2 (held, not routed).
func (b *Broker) plainFor(p *codec.Publish, eng engine.Engine) bool {
	return p.QoS == 1 && (len(p.Topic) == 0 || p.Topic[0] != '$') && b.routes.target(p.Topic) == eng
}

// publishStretch hands the admitted publishes at idx to re in one call and
// spreads its answers back to their places.
func (b *Broker) publishStretch(re engine.RunPublisher, publisher string, ps []*codec.Publish, idx []int, codes []codec.ReasonCode, whys []string) {
	if len(idx) == 1 {
		i := idx[0]
		codes[i], whys[i] = re.(engine.Engine).Publish(publisher, ps[i])
		b.countEngineRefusal(codes[i])
		return
	}
	var pbuf [maxRunStretch]*codec.Publish
	var cbuf [maxRunStretch]codec.ReasonCode
	var wbuf [maxRunStretch]string
	sub := pbuf[:len(idx)]
	for k, i := range idx {
		sub[k] = ps[i]
	}
	re.PublishRun(publisher, sub, cbuf[:len(idx)], wbuf[:len(idx)])
	for k, i := range idx {
		codes[i], whys[i] = cbuf[k], wbuf[k]
		b.countEngineRefusal(cbuf[k])
	}
}

var _ netloop.RunPublisher = (*Broker)(nil)
