//go:build tools

// Package tools pins the fixed dependencies until every one is imported by
// code; removed once they all are.
package tools

import (
	_ "github.com/cenkalti/backoff/v5"
	_ "github.com/dgraph-io/badger/v4"
	_ "github.com/modelcontextprotocol/go-sdk/mcp"
	_ "github.com/open-policy-agent/opa/v1/bundle"
	_ "github.com/open-policy-agent/opa/v1/download"
	_ "github.com/open-policy-agent/opa/v1/rego"
	_ "github.com/open-policy-agent/opa/v1/tester"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/prometheus/client_golang/prometheus/testutil"
	_ "github.com/prometheus/client_golang/prometheus/testutil/promlint"
	_ "github.com/slack-go/slack"
	_ "github.com/slack-go/slack/slacktest"
	_ "github.com/slack-go/slack/socketmode"
)
