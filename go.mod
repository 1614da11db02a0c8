module github.com/saguin-edge/saguin

go 1.26.0

require (
	github.com/VictoriaMetrics/metrics v1.45.0
	github.com/eclipse/paho.golang v0.23.0
	github.com/eclipse/paho.mqtt.golang v1.5.1
	github.com/gobwas/ws v1.5.0
	github.com/goccy/go-yaml v1.19.2
	github.com/mattn/go-sqlite3 v1.14.53
	github.com/panjf2000/gnet/v2 v2.9.7
	github.com/prometheus/client_model v0.6.3
	github.com/prometheus/common v0.74.0
	golang.org/x/sys v0.50.0
)

require (
	github.com/gobwas/httphead v0.1.0 // indirect
	github.com/gorilla/websocket v1.5.3 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/pandatix/go-abnf v0.5.5 // indirect
	github.com/panjf2000/ants/v2 v2.11.3 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	github.com/valyala/fastrand v1.1.0 // indirect
	github.com/valyala/histogram v1.2.0 // indirect
	go.uber.org/multierr v1.11.0 // indirect
	go.uber.org/zap v1.27.0 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sync v0.17.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
	gopkg.in/natefinch/lumberjack.v2 v2.2.1 // indirect
)

replace github.com/panjf2000/gnet/v2 => ./third_party/gnet
