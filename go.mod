module github.com/slackpoll/slackpoll

go 1.26.8

require (
	github.com/google/go-cmp v0.7.0
	github.com/slack-go/slack v0.35.0
	github.com/spf13/pflag v1.0.10
	go.etcd.io/bbolt v1.5.0
	go.yaml.in/yaml/v3 v3.0.6
	golang.org/x/time v0.16.0
)

require (
	github.com/gorilla/websocket v1.5.3 // indirect
	golang.org/x/sys v0.45.0 // indirect
)
