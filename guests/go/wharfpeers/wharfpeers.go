// Package wharfpeers calls other agents and publishes to topics through the
// host (the `peers` import), for Go agents on Wharf. The caller's KDL block
// must allow it: `calls "NAME"` for calls, `publishes "PATTERN"` to publish.
// Copied beside the bindings of agent worlds (not of filters, which do not
// import `peers`).
package wharfpeers

import (
	"fmt"

	"wit_component/wharf_plugin_peers"
	"wit_component/wharf_plugin_types"
)

// Call calls `agent` with a request of this method, path (below the callee's
// mount, starting with "/") and body, and no headers. On failure it returns
// the status the error stands for (403 denied, 404 not found, 508 a loop,
// else the failure's own) and `CASE: message`.
func Call(agent, method, path string, body []byte) (wharf_plugin_types.Response, uint16, string) {
	head := append([]byte{0x83}, str("method")...)
	head = append(append(append(append(append(head, str(method)...), str("path")...), str(path)...), str("query")...), str("")...)
	r := wharf_plugin_peers.Call(agent, wharf_plugin_types.Request{Head: head, Body: body})
	if r.IsOk() {
		return r.Ok(), 0, ""
	}
	e := r.Err()
	switch e.Tag() {
	case wharf_plugin_peers.CallErrorDenied:
		return wharf_plugin_types.Response{}, 403, "denied: " + e.Denied()
	case wharf_plugin_peers.CallErrorNotFound:
		return wharf_plugin_types.Response{}, 404, "not-found: " + e.NotFound()
	case wharf_plugin_peers.CallErrorLoopDetected:
		return wharf_plugin_types.Response{}, 508, "loop: " + e.LoopDetected()
	}
	f := e.Failed()
	return wharf_plugin_types.Response{}, f.F0, "failed: " + f.F1
}

// Publish publishes `payload` to `topic`; how many subscribers it was queued
// for, or the host's reason for refusing it.
func Publish(topic string, payload []byte) (uint32, error) {
	r := wharf_plugin_peers.Publish(topic, payload)
	if r.IsErr() {
		return 0, fmt.Errorf("%s", r.Err())
	}
	return r.Ok(), nil
}

// str encodes a short MessagePack str (under 256 bytes).
func str(s string) []byte {
	if len(s) < 32 {
		return append([]byte{0xa0 | byte(len(s))}, s...)
	}
	return append([]byte{0xd9, byte(len(s))}, s...)
}
