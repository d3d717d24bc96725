module github.com/sluicehq/sluice

go 1.26.8

require (
	github.com/go-json-experiment/json v0.0.0-20260820222146-c27c302e5fc3 // indirect
	github.com/gorilla/websocket v1.5.3 // indirect
	github.com/hashicorp/golang-lru/v2 v2.0.7 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
