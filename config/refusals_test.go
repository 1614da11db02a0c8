package config

import (
	"strings"
	"testing"
)

// with builds a configuration from minimal: brokerExtra is inserted under
// broker: (written at two spaces), top after the broker block.
func with(brokerExtra, top string) string {
	return minimal + brokerExtra + top
}

// TestRefusals holds one case per refusal RFC 0002 and RFC 0005 state, named
// after the rule; each asserts the finding names the key, the file and the
// line, and says what is wrong.
func TestRefusals(t *testing.T) {
	cases := []struct {
		name  string
		src   string
		key   string
		at    string // the configuration text whose line the finding names
		words []string
	}{
		{"UnknownTopLevelKeyIsRefusedByName", with("", "channel:\n  x:\n    type: append\n"), "channel", "channel:", []string{"not a key"}},
		{"UnknownBrokerKeyIsRefusedByName", with("  verbose: true\n", ""), "broker.verbose", "verbose", []string{"refused rather than ignored"}},
		{"UnknownLimitsKeyIsRefusedByName", with("  limits:\n    max_conections: 5\n", ""), "limits.max_conections", "max_conections", nil},
		{"BrokerIDIsRequired", strings.Replace(minimal, "  id: test\n", "", 1), "broker.id", "", []string{"missing"}},
		{"LogLevelIsOneOfFour", with("  log_level: verbose\n", ""), "broker.log_level", "log_level", []string{`"verbose"`, "debug, info, warn or error", "omit the key for info"}},
		{"PidFileIsAbsolute", with("  pid_file: run/saguin.pid\n", ""), "broker.pid_file", "pid_file", []string{"relative"}},
		{"MaxKeepaliveOver65535SecondsIsRefused", with("  limits:\n    max_keepalive: 20h\n", ""), "limits.max_keepalive", "max_keepalive", []string{`"20h"`, "65535 seconds", "none"}},
		{"MaxKeepaliveZeroIsRefused", with("  limits:\n    max_keepalive: 0s\n", ""), "limits.max_keepalive", "max_keepalive", []string{"zero"}},
		{"MaxClientIDLengthBelow23IsRefused", with("  limits:\n    max_client_id_length: 22\n", ""), "limits.max_client_id_length", "max_client_id_length", []string{"23"}},
		{"MaxSessionExpiryNoneIsRefused", with("  limits:\n    max_session_expiry: none\n", ""), "limits.max_session_expiry", "max_session_expiry", []string{"none"}},
		{"MaxSessionExpiryInWholeSeconds", with("  limits:\n    max_session_expiry: 1500ms\n", ""), "limits.max_session_expiry", "max_session_expiry", []string{"whole seconds"}},
		{"ConnectTimeoutNoneIsRefused", with("  limits:\n    connect_timeout: none\n", ""), "limits.connect_timeout", "connect_timeout", []string{"none"}},
		{"ConnectTimeoutSubSecondIsRefused", with("  limits:\n    connect_timeout: 500ms\n", ""), "limits.connect_timeout", "connect_timeout", []string{"whole seconds"}},
		{"SessionQueueBytesBelowMaxMessageSizeIsRefused", with("  limits:\n    max_message_size: 2MiB\n    session_queue_bytes: 1MiB\n", ""), "limits.session_queue_bytes", "session_queue_bytes", []string{"max_message_size"}},
		{"SessionQueueBytesNoneIsRefused", with("  limits:\n    session_queue_bytes: none\n", ""), "limits.session_queue_bytes", "session_queue_bytes", []string{"none"}},
		{"MaxConnectSizeAboveMaxMessageSizeIsRefused", with("  limits:\n    max_message_size: 64KiB\n    max_connect_size: 100KiB\n", ""), "limits.max_connect_size", "max_connect_size", []string{"max_message_size"}},
		{"MaxTopicLevelsBelowOneIsRefused", with("  limits:\n    max_topic_levels: 0\n", ""), "limits.max_topic_levels", "max_topic_levels", nil},
		{"MaxSubscriptionsBelowOneIsRefused", with("  limits:\n    max_subscriptions: 0\n", ""), "limits.max_subscriptions", "max_subscriptions", nil},
		{"PublishRateZeroIsRefused", with("  limits:\n    publish_rate: 0\n", ""), "limits.publish_rate", "publish_rate", []string{"refuse every publish"}},
		{"PublishBytesZeroIsRefused", with("  limits:\n    publish_bytes: 0\n", ""), "limits.publish_bytes", "publish_bytes", []string{"zero"}},
		{"SizeInDecimalUnitsIsRefused", with("  limits:\n    max_message_size: 1MB\n", ""), "limits.max_message_size", "max_message_size", []string{"MiB"}},
		{"DurationWithTwoUnitsIsRefused", with("  limits:\n    write_timeout: 1h30m\n", ""), "limits.write_timeout", "write_timeout", []string{"one unit"}},
		{"MinProtocolVersionIsThreeOneOneOrFive", with("  mqtt:\n    min_protocol_version: \"3.1\"\n", ""), "broker.mqtt.min_protocol_version", "min_protocol_version", []string{"3.1.1", "5"}},
		{"MinProtocolVersionOnAListenerIsRefused", with("  mqtt:\n    listen:\n      tcp:\n        address: 127.0.0.1:1883\n        min_protocol_version: \"5\"\n", ""), "broker.mqtt.listen.tcp.min_protocol_version", "min_protocol_version", []string{"property of the device"}},

		// Storage.
		{"StorageDefaultNamesADefinedProvider", strings.Replace(minimal, "default: mem", "default: disk", 1), "broker.storage.default", "default: disk", []string{`"disk"`, "mem"}},
		{"DefaultRetentionPeriodIsAlwaysStated", strings.Replace(minimal, "    default_retention_period: 1d\n", "", 1), "broker.storage.default_retention_period", "", []string{"none is a value"}},
		{"DefaultRetentionBytesIsAlwaysStated", strings.Replace(minimal, "    default_retention_bytes: none\n", "", 1), "broker.storage.default_retention_bytes", "", []string{"missing"}},
		{"RetentionZeroIsRefused", strings.Replace(minimal, "default_retention_period: 1d", "default_retention_period: 0s", 1), "broker.storage.default_retention_period", "default_retention_period", []string{"zero"}},
		{"RetentionPeriodSubSecondIsRefused", strings.Replace(minimal, "default_retention_period: 1d", "default_retention_period: 500ms", 1), "broker.storage.default_retention_period", "default_retention_period", []string{"whole seconds"}},
		{"ProvidersDefineAtLeastOne", strings.Replace(minimal, "    providers:\n      mem:\n        type: memory\n        snapshot_dir: none\n", "    providers:\n", 1), "broker.storage.providers", "", []string{"at least one"}},
		{"MemoryProviderDeclaresSnapshotDir", strings.Replace(minimal, "        snapshot_dir: none\n", "", 1), "broker.storage.providers.mem.snapshot_dir", "", []string{"snapshot_dir: none"}},
		{"SnapshotDirIsAbsolute", strings.Replace(minimal, "snapshot_dir: none", "snapshot_dir: var/snap", 1), "broker.storage.providers.mem.snapshot_dir", "snapshot_dir", []string{"relative"}},
		{"MemoryProviderTakesNoFilePath", strings.Replace(minimal, "snapshot_dir: none", "snapshot_dir: none\n        file_path: /var/x.db", 1), "broker.storage.providers.mem.file_path", "file_path", []string{"snapshot_dir"}},
		{"SQLiteProviderDeclaresFilePath", sqlite(""), "broker.storage.providers.disk.file_path", "", []string{"missing"}},
		{"SQLiteProviderTakesNoSnapshotDir", sqlite("file_path: /var/x.db\n        snapshot_dir: /var/snap"), "broker.storage.providers.disk.snapshot_dir", "snapshot_dir: /var/snap", []string{"file_path"}},
		{"PublishCommitIntervalAboveOneSecondIsRefused", sqlite("file_path: /x.db\n        publish_commit_interval: 2s\n        publish_commit_max_records: 32"), "broker.storage.providers.disk.publish_commit_interval", "publish_commit_interval", []string{"1s"}},
		{"PublishCommitIntervalRequiresMaxRecords", sqlite("file_path: /x.db\n        publish_commit_interval: 2ms"), "broker.storage.providers.disk.publish_commit_interval", "publish_commit_interval", []string{"publish_commit_max_records"}},
		{"PublishCommitMaxRecordsRequiresInterval", sqlite("file_path: /x.db\n        publish_commit_max_records: 32"), "broker.storage.providers.disk.publish_commit_max_records", "publish_commit_max_records", []string{"without publish_commit_interval"}},
		{"PublishCommitMaxRecordsOfOneIsRefused", sqlite("file_path: /x.db\n        publish_commit_interval: 2ms\n        publish_commit_max_records: 1"), "broker.storage.providers.disk.publish_commit_max_records", "publish_commit_max_records", []string{"2"}},
		{"PublishCommitMaxRecordsAboveMaxConnectionsIsRefused", sqlite("file_path: /x.db\n        publish_commit_interval: 2ms\n        publish_commit_max_records: 10001"), "broker.storage.providers.disk.publish_commit_max_records", "publish_commit_max_records", []string{"max_connections"}},
		{"PublishCommitKeysOnAMemoryProviderAreRefused", strings.Replace(minimal, "snapshot_dir: none", "snapshot_dir: none\n        publish_commit_interval: none", 1), "broker.storage.providers.mem.publish_commit_interval", "publish_commit_interval", []string{"sqlite"}},
		{"ReadConnectionsAboveEightIsRefused", sqlite("file_path: /x.db\n        read_connections: 9"), "broker.storage.providers.disk.read_connections", "read_connections", []string{"8"}},
		{"ReadConnectionsOnAMemoryProviderIsRefused", strings.Replace(minimal, "snapshot_dir: none", "snapshot_dir: none\n        read_connections: 2", 1), "broker.storage.providers.mem.read_connections", "read_connections", []string{"sqlite"}},
		{"FlushIntervalBelowTenMillisecondsIsRefused", sqlite("file_path: /x.db\n        flush_interval: 5ms"), "broker.storage.providers.disk.flush_interval", "flush_interval", []string{"10ms"}},
		{"FlushIntervalNoneIsRefused", sqlite("file_path: /x.db\n        flush_interval: none"), "broker.storage.providers.disk.flush_interval", "flush_interval", []string{"none"}},
		{"ProviderMaxBytesBelowTwiceTheReserveIsRefused", strings.Replace(minimal, "snapshot_dir: none", "snapshot_dir: none\n        max_bytes: 1MiB", 1), "broker.storage.providers.mem.max_bytes", "max_bytes", []string{"1MiB", "8KiB", "max_message_size"}},
		{"SQLiteMaxBytesAboveEmptyDatabaseAndReserve", sqlite("file_path: /x.db\n        max_bytes: 2064KiB"), "broker.storage.providers.disk.max_bytes", "max_bytes", []string{"88KiB"}},
		{"TwoProvidersOnOneStoreAreRefused", strings.Replace(minimal, "snapshot_dir: none", "snapshot_dir: /var/lib/s\n      other:\n        type: memory\n        snapshot_dir: /var/lib/./s\n", 1), "broker.storage.providers.other", "other:", []string{"mem", "two writers"}},
		{"RetainedTakesNoMaxBytes", with("  retained:\n    max_bytes: 1MiB\n", ""), "broker.retained.max_bytes", "max_bytes", []string{"provider"}},
		{"RetainedStorageNamesAProvider", with("  retained:\n    storage: nowhere\n", ""), "broker.retained.storage", "", []string{`"nowhere"`}},
		{"SessionTakesNoMaxBytes", with("  session:\n    max_bytes: 1MiB\n", ""), "broker.session.max_bytes", "max_bytes", nil},
		{"AckCommitIntervalBelowTenMillisecondsIsRefused", with("  session:\n    ack_commit_interval: 5ms\n", ""), "broker.session.ack_commit_interval", "ack_commit_interval", []string{"10ms"}},
		{"AckCommitIntervalNoneIsRefused", with("  session:\n    ack_commit_interval: none\n", ""), "broker.session.ack_commit_interval", "ack_commit_interval", []string{"none"}},
		{"QoS2TakesNoMaxBytes", with("  qos2:\n    max_bytes: 1MiB\n", ""), "broker.qos2.max_bytes", "max_bytes", []string{"max_inflight_per_client"}},
		{"ShareExpiresAfterInWholeSeconds", with("  share:\n    expires_after: 1500ms\n", ""), "broker.share.expires_after", "expires_after", []string{"whole seconds"}},

		// Channels.
		{"ChannelNameHoldsOnlyTheAllowList", with("", "channels:\n  a/b:\n    type: append\n"), "channels.a/b", "a/b:", []string{"a-z"}},
		{"ChannelNameDotDotIsRefused", with("", "channels:\n  ..:\n    type: append\n"), "channels...", "..:", []string{"directory"}},
		{"ChannelNameOver128BytesIsRefused", with("", "channels:\n  "+strings.Repeat("a", 129)+":\n    type: append\n"), "channels." + strings.Repeat("a", 129), "aaaa", []string{"128"}},
		{"ChannelNameEndingDLQIsReserved", with("", "channels:\n  jobs__dlq:\n    type: append\n"), "channels.jobs__dlq", "jobs__dlq:", []string{"reserved"}},
		{"ChannelNameMustFitASnapshotFileName", with("", "channels:\n  "+strings.Repeat(".a", 64)+":\n    type: append\n"), "channels." + strings.Repeat(".a", 64), ".a.a", []string{"%2E"}},
		{"ChannelTypeIsRequired", with("", "channels:\n  events:\n    filter: iot/#\n"), "channels.events.type", "events:", []string{"append, latest or queue"}},
		{"ChannelTypeBroadcastIsRefused", with("", "channels:\n  events:\n    type: broadcast\n"), "channels.events.type", "type: broadcast", []string{"append, latest or queue"}},
		{"FilterHashIsLastOnly", with("", "channels:\n  events:\n    type: append\n    filter: iot/#/x\n"), "channels.events.filter", "filter:", []string{"last level"}},
		{"FilterPlusTakesAWholeLevel", with("", "channels:\n  events:\n    type: append\n    filter: iot/a+b\n"), "channels.events.filter", "filter:", []string{"whole level"}},
		{"FilterFirstLevelIsSpelledOut", with("", "channels:\n  events:\n    type: append\n    filter: +/events\n"), "channels.events.filter", "filter:", []string{"first level"}},
		{"FilterFirstLevelDoesNotBeginWithDollar", with("", "channels:\n  sys:\n    type: append\n    filter: $SYS/#\n"), "channels.sys.filter", "filter:", []string{"$"}},
		{"FilterCarriesNoDLQLevel", with("", "channels:\n  events:\n    type: append\n    filter: iot/__dlq/#\n"), "channels.events.filter", "filter:", []string{"__dlq"}},
		{"QueueFilterCarriesNoBraces", with("", "channels:\n  jobs:\n    type: queue\n    filter: jobs/{a,b}\n"), "channels.jobs.filter", "filter:", []string{"{a,b}", "invariant 4"}},
		{"EmptyBraceIsRefused", with("", "channels:\n  events:\n    type: append\n    filter: iot/{}\n"), "channels.events.filter", "filter:", []string{"empty brace"}},
		{"EmptyAlternativeIsRefused", with("", "channels:\n  events:\n    type: append\n    filter: iot/{a,}\n"), "channels.events.filter", "filter:", []string{"empty alternative"}},
		{"BracesHoldNoSlash", with("", "channels:\n  events:\n    type: append\n    filter: iot/{a/b,c}\n"), "channels.events.filter", "filter:", []string{"/"}},
		{"DuplicateFiltersAfterExpansionAreRefused", with("", "channels:\n  a:\n    type: append\n    filter: iot/{x,y}\n  b:\n    type: latest\n    filter: iot/y\n"), "channels.b.filter", "b:", []string{"iot/y", "channel a", "iot/{x,y}"}},
		{"FilterDeeperThanMaxTopicLevelsIsRefused", with("  limits:\n    max_topic_levels: 2\n", "channels:\n  events:\n    type: append\n    filter: a/b/c\n"), "channels.events.filter", "filter:", []string{"max_topic_levels"}},
		{"FilterLeavesRoomUnderMaxTopicLength", with("  limits:\n    max_topic_length: 4\n", "channels:\n  events:\n    type: append\n    filter: abcd/+\n"), "channels.events.filter", "filter:", []string{"max_topic_length"}},
		{"DefaultFilterIsValidatedToo", with("  limits:\n    max_topic_length: 4\n", "channels:\n  events:\n    type: append\n"), "channels.events.type", "type: append", []string{"events/#"}},
		{"ChannelStorageNamesAProvider", with("", "channels:\n  events:\n    type: append\n    storage: disk\n"), "channels.events.storage", "storage: disk", []string{`"disk"`}},
		{"RetentionBytesOnLatestIsRefused", with("", "channels:\n  s:\n    type: latest\n    retention_bytes: 1GiB\n"), "channels.s.retention_bytes", "retention_bytes: 1GiB", []string{"latest"}},
		{"MaxBytesOnLatestIsRefused", with("", "channels:\n  s:\n    type: latest\n    max_bytes: 1GiB\n"), "channels.s.max_bytes", "max_bytes", []string{"latest"}},
		{"RetentionPeriodOnQueueIsRefused", with("", "channels:\n  j:\n    type: queue\n    retention_period: 1d\n"), "channels.j.retention_period", "    retention_period: 1d", []string{"invariant 2"}},
		{"RetentionBytesOnQueueIsRefused", with("", "channels:\n  j:\n    type: queue\n    retention_bytes: 1GiB\n"), "channels.j.retention_bytes", "retention_bytes: 1GiB", []string{"invariant 2"}},
		{"DLQKeysOnANonQueueAreRefused", with("", "channels:\n  e:\n    type: append\n    dlq_retention_period: 1d\n"), "channels.e.dlq_retention_period", "dlq_retention_period", []string{"only a queue"}},
		{"QueueKeysOnANonQueueAreRefused", with("", "channels:\n  e:\n    type: latest\n    visibility_timeout: 30s\n"), "channels.e.visibility_timeout", "visibility_timeout", []string{"queue"}},
		{"StartOnANonAppendIsRefused", with("", "channels:\n  s:\n    type: latest\n    start: tail\n"), "channels.s.start", "start:", []string{"append"}},
		{"StartIsFloorOrTail", with("", "channels:\n  e:\n    type: append\n    start: head\n"), "channels.e.start", "start:", []string{"floor or tail"}},
		{"DeletionRetentionOnANonLatestIsRefused", with("", "channels:\n  e:\n    type: append\n    deletion_retention_period: 1d\n"), "channels.e.deletion_retention_period", "deletion_retention_period", []string{"latest"}},
		{"VisibilityTimeoutLessThanJobExpiresAfter", with("", "channels:\n  j:\n    type: queue\n    visibility_timeout: 1h\n    job_expires_after: 30m\n"), "channels.j.visibility_timeout", "visibility_timeout", []string{"job_expires_after"}},
		{"VisibilityTimeoutZeroIsRefused", with("", "channels:\n  j:\n    type: queue\n    visibility_timeout: 0s\n"), "channels.j.visibility_timeout", "visibility_timeout", []string{"zero"}},
		{"VisibilityTimeoutSubSecondIsRefused", with("", "channels:\n  j:\n    type: queue\n    visibility_timeout: 500ms\n"), "channels.j.visibility_timeout", "visibility_timeout", []string{"whole seconds"}},
		{"RetryMaxAttemptsAtLeastOne", with("", "channels:\n  j:\n    type: queue\n    retry:\n      max_attempts: 0\n"), "channels.j.retry.max_attempts", "max_attempts", nil},
		{"RetryBackoffWithoutBaseIsRefused", with("", "channels:\n  j:\n    type: queue\n    retry:\n      backoff: linear\n"), "channels.j.retry.backoff", "backoff:", []string{"backoff_base"}},
		{"RetryBaseWithoutBackoffIsRefused", with("", "channels:\n  j:\n    type: queue\n    retry:\n      backoff_base: 2s\n"), "channels.j.retry.backoff_base", "backoff_base", []string{"retry.backoff"}},
		{"RetryBackoffIsNoneLinearOrExponential", with("", "channels:\n  j:\n    type: queue\n    retry:\n      backoff: random\n      backoff_base: 2s\n"), "channels.j.retry.backoff", "backoff:", []string{"linear"}},
		{"ChannelDefinedTwiceInOneFileIsRefused", with("", "channels:\n  e:\n    type: append\n  e:\n    type: latest\n"), "", "", nil},

		// Listeners.
		{"ListenerWithNoAddressIsRefused", with("  mqtt:\n    listen:\n      tcp:\n        allow_anonymous: true\n", ""), "broker.mqtt.listen.tcp.address", "", []string{"no address"}},
		{"UnixListenerWithNoPathIsRefused", with("  mqtt:\n    listen:\n      unix:\n        mode: \"0660\"\n", ""), "broker.mqtt.listen.unix.path", "", []string{"no path"}},
		{"AddressReadsAsNetListenReadsIt", with("  mqtt:\n    listen:\n      tcp:\n        address: localhost\n", ""), "broker.mqtt.listen.tcp.address", "address:", []string{"host:port"}},
		{"PortAbove65535IsRefused", with("  mqtt:\n    listen:\n      tcp:\n        address: :70000\n", ""), "broker.mqtt.listen.tcp.address", "address:", []string{"65535"}},
		{"LinkLocalWithoutZoneIsRefused", with("  mqtt:\n    listen:\n      tcp:\n        address: \"[fe80::1]:1883\"\n", ""), "broker.mqtt.listen.tcp.address", "address:", []string{"link-local"}},
		{"IPv6MulticastIsRefused", with("  mqtt:\n    listen:\n      tcp:\n        address: \"[ff02::1%eth0]:1883\"\n", ""), "broker.mqtt.listen.tcp.address", "address:", []string{"multicast"}},
		{"UnixPathIsAbsolute", with("  mqtt:\n    listen:\n      unix:\n        path: run/s.sock\n", ""), "broker.mqtt.listen.unix.path", "path:", []string{"relative"}},
		{"UnixPathEndsInAFileName", with("  mqtt:\n    listen:\n      unix:\n        path: /run/..\n", ""), "broker.mqtt.listen.unix.path", "path:", []string{"file name"}},
		{"TLSOnAUnixSocketIsRefused", with("  mqtt:\n    listen:\n      unix:\n        path: /run/s.sock\n        tls:\n          cert_file: /c.pem\n          key_file: /k.pem\n", ""), "broker.mqtt.listen.unix.tls", "tls:", []string{"ceremony"}},
		{"ProxyProtocolOnTCPIsRefused", with("  mqtt:\n    listen:\n      tcp:\n        address: :1883\n        proxy_protocol: true\n", ""), "broker.mqtt.listen.tcp.proxy_protocol", "proxy_protocol", []string{"Unix"}},
		{"ProxyProtocolV1IsRefusedNamingTheSetting", with("  mqtt:\n    listen:\n      unix:\n        path: /run/s.sock\n        proxy_protocol: \"on\"\n", ""), "broker.mqtt.listen.unix.proxy_protocol", "proxy_protocol", []string{"v2", "v1"}},
		{"TLSCertificateAndKeyAreAbsolute", with("  mqtt:\n    listen:\n      tcp:\n        address: :8883\n        tls:\n          cert_file: cert.pem\n          key_file: /k.pem\n", ""), "broker.mqtt.listen.tcp.tls.cert_file", "cert_file", []string{"relative"}},
		{"TLSBlockNamesItsKey", with("  mqtt:\n    listen:\n      tcp:\n        address: :8883\n        tls:\n          cert_file: /c.pem\n", ""), "broker.mqtt.listen.tcp.tls.key_file", "", []string{"missing"}},
		{"RequireCertificateWithoutAuthorityIsRefused", with("  mqtt:\n    listen:\n      tcp:\n        address: :8883\n        tls:\n          cert_file: /c.pem\n          key_file: /k.pem\n          require_certificate: true\n", ""), "broker.mqtt.listen.tcp.tls.require_certificate", "require_certificate", []string{"client_ca_file"}},
		{"TLSMinVersionIsOneTwoOrOneThree", with("  mqtt:\n    listen:\n      tcp:\n        address: :8883\n        tls:\n          cert_file: /c.pem\n          key_file: /k.pem\n          min_version: \"1.1\"\n", ""), "broker.mqtt.listen.tcp.tls.min_version", "min_version", []string{"1.2 or 1.3"}},
		{"SecondDoorOfAKindNeedsAName", with("  mqtt:\n    listen:\n      tcp:\n        - address: :1883\n        - address: :1884\n", ""), "broker.mqtt.listen.tcp", "", []string{"no name"}},
		{"TwoDoorsSharingANameAreRefused", with("  mqtt:\n    listen:\n      tcp:\n        - name: a\n          address: :1883\n        - name: a\n          address: :1884\n", ""), "broker.mqtt.listen.tcp[a]", "", []string{`"a"`}},
		{"ADoorNamedAfterAnotherKindCollides", with("  mqtt:\n    listen:\n      tcp:\n        - name: ws\n          address: :1883\n        - name: x\n          address: :1884\n      ws:\n        address: :8083\n", ""), "broker.mqtt.listen.ws", "", []string{`"ws"`}},
		{"TwoDoorsOnOnePortClash", with("  mqtt:\n    listen:\n      tcp:\n        address: 127.0.0.1:1883\n      ws:\n        address: 127.0.0.1:1883\n", ""), "broker.mqtt.listen.ws", "", []string{"1883", "broker.mqtt.listen.tcp"}},
		{"AWildcardHostClashesWithAnyHost", with("  mqtt:\n    listen:\n      tcp:\n        address: :1883\n      ws:\n        address: 10.0.0.1:1883\n", ""), "broker.mqtt.listen.ws", "", []string{"1883"}},
		{"HostsAreComparedAsAddresses", with("  mqtt:\n    listen:\n      tcp:\n        address: 127.0.0.1:1883\n      ws:\n        address: \"[::ffff:127.0.0.1]:1883\"\n", ""), "broker.mqtt.listen.ws", "", []string{"1883"}},
		{"PortsAreComparedAsNumbers", with("  mqtt:\n    listen:\n      tcp:\n        address: 127.0.0.1:1883\n      ws:\n        address: 127.0.0.1:01883\n", ""), "broker.mqtt.listen.ws", "", []string{"1883"}},
		{"OperationsPortClashesWithMQTTPort", with("  mqtt:\n    listen:\n      tcp:\n        address: :9090\n  operations:\n    listen:\n      tcp:\n        address: 127.0.0.1:9090\n", ""), "broker.operations.listen.tcp", "", []string{"9090"}},
		{"UnixPathsAreComparedCleaned", with("  mqtt:\n    listen:\n      unix:\n        path: /run/s/r.sock\n  operations:\n    listen:\n      unix:\n        path: /run/s/./r.sock\n", ""), "broker.operations.listen.unix", "", []string{"/run/s/r.sock"}},
		{"WSOriginWithAPathIsRefused", with("  mqtt:\n    listen:\n      ws:\n        address: :8083\n        allowed_origins: [\"https://a.example.com/page\"]\n", ""), "broker.mqtt.listen.ws.allowed_origins", "allowed_origins", []string{"path"}},
		{"WSOriginNullIsRefused", with("  mqtt:\n    listen:\n      ws:\n        address: :8083\n        allowed_origins: [\"null\"]\n", ""), "broker.mqtt.listen.ws.allowed_origins", "allowed_origins", []string{"sandboxed"}},
		{"SameOriginOnTCPIsRefused", with("  mqtt:\n    listen:\n      tcp:\n        address: :1883\n        same_origin: false\n", ""), "broker.mqtt.listen.tcp.same_origin", "same_origin", []string{"ws"}},

		// Authentication.
		{"AllowAnonymousFalseWithoutAPasswordFileIsRefused", with("  mqtt:\n    allow_anonymous: false\n", ""), "broker.mqtt.listen.tcp", "", []string{"admits nobody"}},
		{"ACLFileWithoutAuthenticationIsRefused", with("  mqtt:\n    acl_file: /etc/saguin/acl.yaml\n", ""), "broker.mqtt.acl_file", "", []string{"nothing authenticates"}},
		{"ACLFileBesideAllowAnonymousTrueIsRefused", with("  mqtt:\n    acl_file: /etc/saguin/acl.yaml\n    password_file: /etc/saguin/p\n    allow_anonymous: true\n", ""), "broker.mqtt.allow_anonymous", "", []string{"acl_file", "*"}},
		{"ACLFileIsAbsolute", with("  mqtt:\n    acl_file: acl.yaml\n", ""), "broker.mqtt.acl_file", "acl_file", []string{"relative"}},
		{"OperationsListenerWithNoDoorIsRefused", with("  operations:\n    min_scrape_interval: 60s\n", ""), "broker.operations.listen", "", []string{"opens nothing"}},
		{"OperationsAllowAnonymousIsRefused", with("  operations:\n    listen:\n      tcp:\n        address: 127.0.0.1:9090\n        allow_anonymous: true\n", ""), "broker.operations.listen.tcp.allow_anonymous", "allow_anonymous", []string{"/metrics"}},
		{"OperationsRoutableAddressNeedsACredential", with("  operations:\n    listen:\n      tcp:\n        address: 0.0.0.0:9090\n", ""), "broker.operations.listen.tcp.address", "", []string{"loopback", "password_file"}},
		{"OperationsRequireCertificateFalseDoesNotLiftLoopbackRule", with("  operations:\n    listen:\n      tcp:\n        address: 0.0.0.0:9090\n        tls:\n          cert_file: /c.pem\n          key_file: /k.pem\n          client_ca_file: /ca.pem\n          require_certificate: false\n", ""), "broker.operations.listen.tcp.address", "", []string{"loopback"}},
		{"MinScrapeIntervalBelowSixtySecondsIsRefused", with("  operations:\n    listen:\n      tcp:\n        address: 127.0.0.1:9090\n    min_scrape_interval: 30s\n", ""), "broker.operations.min_scrape_interval", "min_scrape_interval", []string{"1m"}},
		{"MinScrapeIntervalSubSecondIsRefused", with("  operations:\n    listen:\n      tcp:\n        address: 127.0.0.1:9090\n    min_scrape_interval: 60500ms\n", ""), "broker.operations.min_scrape_interval", "min_scrape_interval", []string{"whole seconds"}},
		{"OperationsWSIsRefused", with("  operations:\n    listen:\n      ws:\n        address: 127.0.0.1:9091\n", ""), "broker.operations.listen.ws", "ws:", []string{"tcp and unix"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.key == "" {
				if _, err := parseYAML(t, c.src); err == nil {
					t.Fatal("accepted")
				}
				return
			}
			line := 0
			if c.at != "" {
				line = lineIn(t, c.src, c.at)
			}
			refused(t, c.src, c.key, line, c.words...)
		})
	}
}

func sqlite(keys string) string {
	return strings.Replace(minimal, "      mem:\n        type: memory\n        snapshot_dir: none\n",
		"      mem:\n        type: memory\n        snapshot_dir: none\n      disk:\n        type: sqlite\n        "+keys+"\n", 1)
}
