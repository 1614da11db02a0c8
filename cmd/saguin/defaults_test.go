package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/saguin-edge/saguin/broker"
	"github.com/saguin-edge/saguin/config"
	"github.com/saguin-edge/saguin/config/defaults"
	"github.com/saguin-edge/saguin/netloop"
)

// A key left out of the file and an option left zero mean the same thing:
// the options built from a configuration that writes no limit, no qos2 and
// no session key equal zero options given their defaults, field by field,
// in the broker and in netloop (config/defaults holds each figure once).
func TestAKeyLeftOutMeansWhatAZeroOptionMeans(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "saguin.yaml")
	yaml := `broker:
  id: defaults
  storage:
    default: mem
    default_retention_period: none
    default_retention_bytes: none
    providers:
      mem:
        type: memory
        snapshot_dir: none
`
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	st, err := openStorage(cfg, broker.StoreHooks(new(broker.Counters)), log)
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()

	fromFile := brokerOptions(cfg, st, log)
	zero := broker.Options{}.WithDefaults()
	for _, c := range []struct {
		key       string
		file, opt any
	}{
		{"limits.max_topic_length", fromFile.MaxTopicLength, zero.MaxTopicLength},
		{"limits.max_topic_levels", fromFile.MaxTopicLevels, zero.MaxTopicLevels},
		{"limits.max_subscriptions", fromFile.MaxSubscriptions, zero.MaxSubscriptions},
		{"limits.max_header_count", fromFile.MaxHeaderCount, zero.MaxHeaderCount},
		{"limits.max_header_bytes", fromFile.MaxHeaderBytes, zero.MaxHeaderBytes},
		{"limits.session_queue_bytes", fromFile.SessionQueueBytes, zero.SessionQueueBytes},
		{"broker.session.ack_commit_interval", fromFile.AckCommitInterval, zero.AckCommitInterval},
		{"broker.qos2.max_inflight_per_client", fromFile.QoS2MaxInflight, zero.QoS2MaxInflight},
		{"limits.publish_rate (none)", fromFile.PublishRate, zero.PublishRate},
		{"limits.publish_bytes (none)", fromFile.PublishBytes, zero.PublishBytes},
		{"broker.share.expires_after (none)", fromFile.ShareExpiresAfter, zero.ShareExpiresAfter},
	} {
		if c.file != c.opt {
			t.Errorf("broker: %s left out gives %v, a zero option %v", c.key, c.file, c.opt)
		}
	}
	// Zero is "none" for broker.qos2.expires_after, whose default is not:
	// a key left out takes the one figure.
	if fromFile.QoS2ExpiresAfter != defaults.QoS2ExpiresAfter {
		t.Errorf("broker.qos2.expires_after left out gives %v, want %v", fromFile.QoS2ExpiresAfter, defaults.QoS2ExpiresAfter)
	}

	nf, err := netloopOptions(cfg, nil, nil, log)
	if err != nil {
		t.Fatal(err)
	}
	nz := netloop.Options{}.WithDefaults()
	for _, c := range []struct {
		key       string
		file, opt any
	}{
		{"limits.max_connections", nf.MaxConnections, nz.MaxConnections},
		{"limits.connect_timeout", nf.ConnectTimeout, nz.ConnectTimeout},
		{"limits.max_connect_size", nf.MaxConnectSize, nz.MaxConnectSize},
		{"limits.max_message_size", nf.MaxMessageSize, nz.MaxMessageSize},
		{"limits.max_client_id_length", nf.MaxClientIDLength, nz.MaxClientIDLength},
		{"limits.max_session_expiry", nf.MaxSessionExpiry, nz.MaxSessionExpiry},
		{"limits.session_queue_bytes", nf.SessionQueueBytes, nz.SessionQueueBytes},
	} {
		if c.file != c.opt {
			t.Errorf("netloop: %s left out gives %v, a zero option %v", c.key, c.file, c.opt)
		}
	}
	// Zero is "none" for these in netloop; a key left out is the default.
	if nf.WriteTimeout != defaults.WriteTimeout || nf.MaxConnectRate != defaults.MaxConnectRate {
		t.Errorf("write_timeout %v, max_connect_rate %d left out; want %v, %d", nf.WriteTimeout, nf.MaxConnectRate, defaults.WriteTimeout, defaults.MaxConnectRate)
	}
}
