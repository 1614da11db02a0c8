package ops

// Family is one name of RFC 0005's metrics catalogue: its type, the labels
// each of its series carries in order, and the HELP line a scrape gives it.
type Family struct {
	Name   string
	Type   string // "counter" or "gauge"
	Labels []string
	Help   string
}

// Catalogue is RFC 0005 "The catalogue", closed: every name the listener may
// publish, in the order a scrape writes them, and nothing else. A scrape
// writes a family only where it has a series (a name with none gets neither
// HELP nor TYPE); which series exist is the presence rule each row of the
// RFC states, kept in metrics.go.
var Catalogue = []Family{
	// The broker.
	{"saguin_build_info", "gauge", []string{"version", "broker_id"}, "Always 1. This is where saguin's own version is stated."},
	{"saguin_uptime_seconds", "gauge", nil, "Seconds since the broker started."},
	{"saguin_connections", "gauge", nil, "MQTT connections whose CONNECT was accepted, now."},
	{"saguin_connections_by_protocol", "gauge", []string{"protocol"}, "Connected now, by the MQTT version each client connected with."},
	{"saguin_connections_total", "counter", nil, "Connections accepted since start."},
	{"saguin_sessions_offline", "gauge", nil, "Sessions held with nothing connected to them, restored ones included."},
	{"saguin_wills_published_total", "counter", []string{"cause"}, "Wills published on a client's behalf, by what made each due."},
	{"saguin_wills_cancelled_total", "counter", nil, "Wills a client cancelled by resuming its session inside its Will Delay Interval."},
	{"saguin_wills_waiting", "gauge", nil, "Wills waiting out their Will Delay Interval now."},
	{"saguin_sessions_restored_total", "counter", nil, "Sessions put back from broker.session.storage when the broker started."},
	{"saguin_sessions_dropped_total", "counter", []string{"cause"}, "Sessions the session store could not keep, by cause."},
	{"saguin_session_queue_messages", "gauge", nil, "Deliveries sessions are owed from the broadcast log and have not acknowledged."},
	{"saguin_session_queue_bytes", "gauge", nil, "The memory those deliveries take, as limits.session_queue_bytes counts it."},
	{"saguin_retained_messages", "gauge", nil, "Retained messages held on broadcast topics."},
	{"saguin_qos2_held", "gauge", nil, "Exactly-once publishes received and not yet released."},
	{"saguin_qos2_abandoned_total", "counter", nil, "Exactly-once publishes taken in and never released."},
	{"saguin_qos2_max_inflight_per_client", "gauge", nil, "The configured broker.qos2.max_inflight_per_client."},
	{"saguin_subscriptions", "gauge", nil, "Every subscription the broker holds."},
	{"saguin_session_expiry_shortened_total", "counter", nil, "CONNECTs and restored sessions given limits.max_session_expiry instead of what they asked."},
	{"saguin_max_session_expiry_seconds", "gauge", nil, "The configured limits.max_session_expiry."},
	// The wire.
	{"saguin_bytes_received_total", "counter", nil, "Bytes read from MQTT connections since start."},
	{"saguin_bytes_sent_total", "counter", nil, "Bytes written to MQTT connections since start."},
	{"saguin_publishes_received_total", "counter", nil, "PUBLISH packets that arrived, refused ones included."},
	{"saguin_deliveries_sent_total", "counter", nil, "Publishes sent to subscribers, re-sends included."},
	{"saguin_deliveries_refused_total", "counter", nil, "Broadcast deliveries refused at limits.session_queue_bytes or for want of a packet identifier."},
	// Publishing.
	{"saguin_published_total", "counter", []string{"channel"}, "Publishes stored or routed, per channel and for broadcast."},
	{"saguin_connections_refused_total", "counter", []string{"reason"}, "Connections refused or ended for a refusal, by reason."},
	{"saguin_publish_refused_total", "counter", []string{"reason"}, "Publishes refused, by the reason code answered."},
	{"saguin_subscriptions_refused_total", "counter", []string{"reason"}, "Topic filters a SUBACK refused, by the reason code decided."},
	{"saguin_broadcast_unmatched_total", "counter", nil, "Publishes that matched no subscription and no channel."},
	{"saguin_deliveries_dropped_total", "counter", nil, "Broadcast QoS 0 deliveries discarded because the client's outbound queue was full."},
	{"saguin_deliveries_expired_total", "counter", nil, "Deliveries whose Message Expiry ran out before they were sent."},
	{"saguin_shares_held_total", "counter", nil, "Deliveries put on a shared group's list."},
	{"saguin_shares_drained_total", "counter", nil, "Deliveries a shared group handed to a member."},
	{"saguin_shares_dropped_total", "counter", []string{"cause"}, "Deliveries a shared group dropped, by cause."},
	{"saguin_session_deliveries_dropped_total", "counter", []string{"cause"}, "Deliveries a session never received, by cause."},
	// Channels.
	{"saguin_channel_info", "gauge", []string{"channel", "filter", "type", "provider"}, "Always 1, per channel: its filter as written, its type and its provider."},
	{"saguin_channel_records", "gauge", []string{"channel"}, "Records held: next minus floor on an append channel, topics held on a latest one."},
	{"saguin_channel_bytes", "gauge", []string{"channel"}, "Bytes an append or queue channel holds."},
	{"saguin_channel_next_offset", "gauge", []string{"channel"}, "The offset an append channel assigns next."},
	{"saguin_channel_floor_offset", "gauge", []string{"channel"}, "The oldest offset still readable."},
	{"saguin_channel_retention_removed_total", "counter", []string{"channel"}, "Records retention has deleted."},
	{"saguin_channel_consumer_position_min", "gauge", []string{"channel"}, "The lowest stored position."},
	{"saguin_channel_consumers", "gauge", []string{"channel"}, "Durable consumers holding a stored position."},
	{"saguin_channel_partitioned_consumers", "gauge", []string{"channel"}, "Subscribers that declared a partition slice on this channel."},
	{"saguin_channel_position_lost_total", "counter", []string{"channel"}, "Readers whose stored position the retention floor passed."},
	{"saguin_latest_superseded_total", "counter", []string{"channel"}, "Values a subscriber was not sent because a newer one took their place."},
	// Queues.
	{"saguin_queue_depth", "gauge", []string{"channel"}, "Unresolved work."},
	{"saguin_queue_inflight", "gauge", []string{"channel"}, "Out with a worker now."},
	{"saguin_queue_delivered_total", "counter", []string{"channel"}, "Records handed to a worker, once per hand-over."},
	{"saguin_queue_acknowledged_total", "counter", []string{"channel"}, "Records a worker acknowledged."},
	{"saguin_queue_returned_total", "counter", []string{"channel"}, "Records handed back by a worker."},
	{"saguin_queue_redelivered_total", "counter", []string{"channel"}, "Records taken back on a visibility timeout."},
	{"saguin_queue_dead_lettered_total", "counter", []string{"channel"}, "Records moved to the dead-letter channel."},
	{"saguin_queue_expired_total", "counter", []string{"channel"}, "Work that aged out unresolved."},
	{"saguin_queue_retain_ignored_total", "counter", []string{"channel"}, "Retained publishes this queue took as ordinary work."},
	// Storage.
	{"saguin_provider_info", "gauge", []string{"provider", "type"}, "Always 1; type is memory or sqlite."},
	{"saguin_provider_bytes", "gauge", []string{"provider"}, "Everything the provider holds, state included."},
	{"saguin_provider_max_bytes", "gauge", []string{"provider"}, "The provider's max_bytes; zero for no bound."},
	{"saguin_storage_errors_total", "counter", []string{"provider"}, "Storage calls and periodic flushes that failed."},
	{"saguin_storage_commits_total", "counter", []string{"provider", "closed_by"}, "Transactions that stored publishes, by what closed them."},
	{"saguin_storage_committed_records_total", "counter", []string{"provider"}, "Records those transactions carried."},
	{"saguin_provider_publish_commit_max_records", "gauge", []string{"provider"}, "The provider's publish_commit_max_records."},
	// Bridges.
	{"saguin_bridge_info", "gauge", []string{"bridge", "peer"}, "Always 1."},
	{"saguin_bridge_connected", "gauge", []string{"bridge"}, "1 or 0."},
	{"saguin_bridge_stopped", "gauge", []string{"bridge"}, "1 when the bridge halted itself rather than losing its link."},
	{"saguin_bridge_received_total", "counter", []string{"bridge"}, "Records that arrived from the peer."},
	{"saguin_bridge_unstored_total", "counter", []string{"bridge", "cause"}, "Records from the peer the bridge did not store, by cause."},
	{"saguin_bridge_sent_total", "counter", []string{"bridge"}, "Records forwarded to the peer."},
	{"saguin_bridge_loops_skipped_total", "counter", []string{"bridge"}, "Records not forwarded because they arrived over a bridge."},
	{"saguin_bridge_unsent_total", "counter", []string{"bridge", "cause"}, "Records an outbound rule did not send the peer, by cause."},
	{"saguin_bridge_reconnects_total", "counter", []string{"bridge"}, "Reconnections of the bridge's link."},
	// The Go runtime, from runtime/metrics.
	{"saguin_go_heap_live_bytes", "gauge", nil, "Heap the last garbage collection found reachable. From /gc/heap/live:bytes."},
	{"saguin_go_heap_goal_bytes", "gauge", nil, "Heap size at which the next garbage collection starts. From /gc/heap/goal:bytes."},
	{"saguin_go_gc_cycles_total", "counter", nil, "Garbage collections completed since start. From /gc/cycles/total:gc-cycles."},
	{"saguin_go_gc_cpu_seconds_total", "counter", nil, "CPU seconds spent collecting garbage. From /cpu/classes/gc/total:cpu-seconds."},
	{"saguin_go_gc_assist_cpu_seconds_total", "counter", nil, "CPU seconds goroutines spent helping the collector. From /cpu/classes/gc/mark/assist:cpu-seconds."},
	{"saguin_go_stack_bytes", "gauge", nil, "Memory held for goroutine stacks. From /memory/classes/heap/stacks:bytes."},
	{"saguin_go_allocated_bytes_total", "counter", nil, "Heap bytes allocated since start. From /gc/heap/allocs:bytes."},
	{"saguin_go_allocated_objects_total", "counter", nil, "Heap objects allocated since start. From /gc/heap/allocs:objects."},
	{"saguin_go_gogc_percent", "gauge", nil, "The effective GOGC; -1 when garbage collection is off. From /gc/gogc:percent."},
	{"saguin_go_memory_limit_bytes", "gauge", nil, "The effective GOMEMLIMIT. From /gc/gomemlimit:bytes."},
}
