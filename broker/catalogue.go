package broker

import (
	"encoding/json"
	"strings"

	"github.com/saguin-edge/saguin/broker/acl"
	records "github.com/saguin-edge/saguin/broker/channel"
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop/delivery"
)

// cataloguePrefix begins $saguin/catalogue/<channel>.
const cataloguePrefix = "$saguin/catalogue/"

// CatalogueEntry is one configured channel as $saguin/catalogue/<channel>
// describes it (RFC 0002 "Asking what a channel is").
type CatalogueEntry struct {
	Name string
	Type string // append, latest or queue
	// Filter is as written, braces and all (<name>/# where none was
	// written; a dead-letter channel's derived filter).
	Filter string
	// Pin is a queue's subscription form, "" for the others.
	Pin string
}

// typeVerbs are the verbs of each channel type (RFC 0002 "The verbs").
var typeVerbs = map[string][]acl.Verb{
	"append": {acl.Write, acl.Read, acl.Seek},
	"latest": {acl.Write, acl.Read, acl.Delete},
	"queue":  {acl.Write, acl.Consume},
}

// catalogue answers $saguin/catalogue/<channel>: the channel's name, type,
// filter as written, this client's verbs on it and, for a queue, its form, as
// JSON on the asking connection only; the empty reply for a channel the
// client holds no verb on and for a name that is no channel (PUBACK 0x00
// either way). 0x83 with no Response Topic, 0x90 for a name holding /; at
// QoS 0 the request is dropped (RFC 0002; checklist D5).
func (b *Broker) catalogue(c delivery.Client, p *codec.Publish) (codec.ReasonCode, string) {
	if _, code, why := records.ClassifyPublish(string(p.Topic), b.routes.kindOf); code != codec.Success {
		return b.refusePublish(c.ClientID(), p, code, why)
	}
	if p.QoS == 0 {
		return codec.Success, ""
	}
	if len(p.Properties.ResponseTopic) == 0 {
		return b.refusePublish(c.ClientID(), p, codec.ImplementationSpecificError, "a catalogue request needs a Response Topic to answer on")
	}
	name := strings.TrimPrefix(string(p.Topic), cataloguePrefix)
	answer := codec.Publish{Topic: p.Properties.ResponseTopic, Payload: []byte{}}
	if p.Properties.Present.Has(codec.PropCorrelationData) {
		answer.Properties.CorrelationData = p.Properties.CorrelationData
		answer.Properties.Present.Set(codec.PropCorrelationData)
	}
	for _, e := range b.opts.Catalogue {
		if e.Name != name {
			continue
		}
		verbs := b.catalogueVerbs(c.ClientID(), e)
		if len(verbs) == 0 {
			break
		}
		doc := struct {
			Name   string   `json:"name"`
			Type   string   `json:"type"`
			Filter string   `json:"filter"`
			Verbs  []string `json:"verbs"`
			Pin    string   `json:"pin,omitempty"`
		}{e.Name, e.Type, e.Filter, verbs, e.Pin}
		out, err := json.Marshal(doc)
		if err == nil {
			answer.Payload = out
		}
		break
	}
	c.Deliver(delivery.NewMessage(&answer, b.now), delivery.Delivery{})
	return codec.Success, ""
}

// catalogueVerbs are the verbs clientID holds on e: every verb of its type
// without an acl_file, those its grants allow with one (checklist E25).
func (b *Broker) catalogueVerbs(clientID string, e CatalogueEntry) []string {
	var g *acl.Grants
	if a := b.access.Load(); a != nil && a.ACL != nil {
		sh := b.shard(clientID)
		sh.mu.Lock()
		s := sh.sessions[clientID]
		var who *identity
		if s != nil {
			who = s.who.Load()
		}
		sh.mu.Unlock()
		g = grantsIn(a.ACL, who, clientID)
	}
	out := []string{}
	for _, v := range typeVerbs[e.Type] {
		if g == nil || g.AllowsChannel(e.Name, v) {
			out = append(out, v.Names()...)
		}
	}
	return out
}
