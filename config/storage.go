package config

import (
	"fmt"
	"sort"
	"time"
)

func (l *loader) storage(o *obj, b *obj) {
	s := &l.cfg.Broker.Storage
	if b.n != nil && o.n == nil {
		l.c.at(b.n, "broker.storage", " is missing: Sagüin keeps nothing in a store the operator did not name, so broker.storage.providers and broker.storage.default are required")
	}
	if o.n == nil {
		// Reported above (or the whole broker block is missing); the keys
		// below would only repeat it.
		for _, k := range []string{"default", "default_retention_period", "default_retention_bytes", "providers"} {
			o.get(k)
		}
		return
	}
	if v, ok := o.str("default"); ok {
		s.Default = v
	} else if !o.has("default") {
		o.at("default", " is missing: it names the provider a channel that names none is kept on, and there is no built-in one")
	}
	required := func(k string) {
		if !o.has(k) {
			o.at(k, " is missing: it is always stated, and none is a value rather than an omission - a channel that keeps everything says so")
		}
	}
	required("default_retention_period")
	s.DefaultRetentionPeriod = o.duration("default_retention_period", 0, durSpec{min: time.Second, none: true})
	required("default_retention_bytes")
	s.DefaultRetentionBytes = o.size("default_retention_bytes", 0, sizeSpec{min: 1, none: true})
	pn := o.get("providers")
	if pn == nil || pn.kind == nullNode {
		o.at("providers", " defines no provider; at least one is required (a memory provider with snapshot_dir: none keeps nothing across a restart)")
	}
	byName := map[string]Provider{}
	for _, g := range l.groups(pn, "broker.storage.providers") {
		for i, name := range g.n.keys {
			key := "broker.storage.providers." + name
			if prev, dup := byName[name]; dup {
				l.c.atLine(g.file, g.n.keyLine[i], key, " is defined twice: here and in %s line %d; one name is one provider", l.displayOf(prev.ConfiguredIn), prev.Line)
				continue
			}
			if name == "" || hasControl(name) {
				l.c.atLine(g.file, g.n.keyLine[i], key, " %q is not a provider name: it is non-empty and holds no control character", name)
			}
			po := l.c.object(g.n.vals[i], key)
			po.home, po.file = g.n.keyLine[i], g.file
			p := l.provider(po, name, key)
			p.ConfiguredIn, p.Line = g.absFile, g.n.keyLine[i]
			byName[name] = p
		}
	}
	for _, name := range sortedNames(byName) {
		s.Providers = append(s.Providers, byName[name])
	}
	o.done()
}

func (l *loader) provider(o *obj, name, key string) Provider {
	p := Provider{Name: name}
	p.Type = o.enum("type", "", ProviderMemory, ProviderSQLite)
	if !o.has("type") {
		o.at("type", " is missing: a provider is memory or sqlite")
	}
	p.MaxBytes = o.size("max_bytes", 0, sizeSpec{min: 1, none: true})
	lim := l.cfg.Broker.Limits
	reserve := lim.MaxMessageSize + lim.MaxHeaderBytes
	if p.MaxBytes > 0 && p.MaxBytes < 2*reserve {
		o.at("max_bytes", " %s is below twice what the provider holds back for the operations that free it, which is limits.max_message_size (%s) plus limits.max_header_bytes (%s), so at least %s; raise max_bytes or lower limits.max_message_size",
			FormatSize(p.MaxBytes), FormatSize(lim.MaxMessageSize), FormatSize(lim.MaxHeaderBytes), FormatSize(2*reserve))
	}
	sqliteOnly := []string{"file_path", "publish_commit_interval", "publish_commit_max_records", "read_connections", "flush_interval"}
	switch p.Type {
	case ProviderMemory:
		if !o.has("snapshot_dir") {
			o.at("snapshot_dir", " is missing: a memory provider declares the directory its snapshots go to, or snapshot_dir: none to keep nothing across a restart - there is no default, because both would be wrong")
		}
		p.SnapshotDir, _ = o.absPath("snapshot_dir", "a directory", true)
		for _, k := range sqliteOnly {
			if k == "file_path" {
				o.refuse(k, " is a sqlite provider's key; a memory provider names snapshot_dir, a directory - they promise different amounts")
			} else {
				o.refuse(k, " is a sqlite provider's key; a memory provider has no transaction or database file for it to govern")
			}
		}
	case ProviderSQLite:
		if !o.has("file_path") {
			o.at("file_path", " is missing: a sqlite provider declares the file of its database, and no filename is invented")
		}
		p.FilePath, _ = o.absPath("file_path", "the database file", false)
		o.refuse("snapshot_dir", " is a memory provider's key; a sqlite provider names file_path, its database file")
		l.commitKeys(o, &p)
		p.ReadConnections = int(o.integer("read_connections", 2, intSpec{min: 0, max: 8,
			why: "0 puts every read on the write connection; above 8 a read waits for a CPU rather than a connection"}))
		p.FlushInterval = o.duration("flush_interval", 150*time.Millisecond, durSpec{min: 10 * time.Millisecond, max: time.Second, subSecond: true,
			why: "there is no setting that turns forcing the log to disk off"})
		if p.MaxBytes > 0 && p.MaxBytes <= sqliteEmptyDatabase+2*reserve {
			o.at("max_bytes", " %s is not above what an empty database takes (%s) plus twice the reserve (%s); SQLite will not set a ceiling below the pages in use, so the provider could never hold a record - write more than %s",
				FormatSize(p.MaxBytes), FormatSize(sqliteEmptyDatabase), FormatSize(2*reserve), FormatSize(sqliteEmptyDatabase+2*reserve))
		}
	default:
		for _, k := range append(sqliteOnly, "snapshot_dir") {
			o.get(k)
		}
	}
	o.done()
	return p
}

// commitKeys reads publish_commit_interval and publish_commit_max_records,
// which are written together or not at all (RFC 0002 "How a sqlite provider
// commits publishes").
func (l *loader) commitKeys(o *obj, p *Provider) {
	interval, intervalWritten := o.has("publish_commit_interval"), false
	if s, _, ok := o.scalar("publish_commit_interval"); ok {
		if s == "none" {
			p.PublishCommit = CommitEach
		} else if d := o.duration("publish_commit_interval", 0, durSpec{min: time.Millisecond, max: time.Second, subSecond: true,
			why: "past a second a client waiting for its acknowledgement is held to one record a second; single-figure milliseconds is the useful range"}); d > 0 {
			p.PublishCommit, p.PublishCommitInterval, intervalWritten = CommitInterval, d, true
		}
	}
	maxConn := int64(l.cfg.Broker.Limits.MaxConnections)
	if o.has("publish_commit_max_records") {
		n := o.integer("publish_commit_max_records", 0, intSpec{min: 2, max: maxConn,
			why: fmt.Sprintf("1 would wait out the interval to commit one record, and more than limits.max_connections (%d) can never fill", maxConn)})
		switch {
		case !interval:
			o.at("publish_commit_max_records", " is written without publish_commit_interval: nothing would wait for the count, and the file would read as though it set one; write both, or neither")
		case p.PublishCommit == CommitEach:
			o.at("publish_commit_max_records", " is written beside publish_commit_interval: none, a transaction per publish, which it cannot apply to; remove it")
		default:
			p.PublishCommitMaxRecords = int(n)
		}
	} else if intervalWritten {
		o.at("publish_commit_interval", " is written without publish_commit_max_records, which is required with it and has no default: set it at or below the number of connections publishing at the same time")
	}
}

// providerNamed finds a provider by name.
func (c *Config) providerNamed(name string) (Provider, bool) {
	i := sort.Search(len(c.Broker.Storage.Providers), func(i int) bool { return c.Broker.Storage.Providers[i].Name >= name })
	if i < len(c.Broker.Storage.Providers) && c.Broker.Storage.Providers[i].Name == name {
		return c.Broker.Storage.Providers[i], true
	}
	return Provider{}, false
}
