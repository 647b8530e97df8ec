// Package export_wit_world is the echo agent (Go): it answers 200 with the
// request body and headers, plus x-echo-method and x-echo-path. With
// x-echo-chunks: N (1-64) it streams the answer: the head at once, the body
// in N pieces, the last one returned by Handle. With x-echo-call: AGENT it
// calls AGENT through the host with the body and answers with its status and
// body (a refused or failed call: its status and `CASE: message`); with
// x-echo-publish: TOPIC it publishes the body and adds x-echo-queued.
package export_wit_world

import (
	"strconv"

	"wit_component/wharf_plugin_streaming"
	"wit_component/wharf_plugin_types"
	"wit_component/wharfguest"
	"wit_component/wharfpeers"

	witTypes "go.bytecodealliance.org/pkg/wit/types"
)

type (
	Request  = wharf_plugin_types.Request
	Response = wharf_plugin_types.Response
	Error    = wharf_plugin_types.Error
)

func Handle(req Request) witTypes.Result[Response, Error] {
	wharfguest.Paced(len(req.Body))
	head, err := wharfguest.DecodeHead(req.Head)
	if err != nil {
		return witTypes.Err[Response](wharf_plugin_types.MakeErrorBadRequest("malformed request head"))
	}
	if agent, ok, _ := wharfguest.Header(req.Headers, "x-echo-call"); ok {
		resp, status, why := wharfpeers.Call(agent, "POST", "/", req.Body)
		if status != 0 {
			return witTypes.Ok[Response, Error](Response{Status: status, Body: []byte(why)})
		}
		return witTypes.Ok[Response, Error](Response{Status: resp.Status, Body: resp.Body})
	}
	extra := [][2]string{
		[2]string{"x-echo-method", head.Method},
		[2]string{"x-echo-path", head.Path},
	}
	if topic, ok, _ := wharfguest.Header(req.Headers, "x-echo-publish"); ok {
		queued := "refused"
		if n, err := wharfpeers.Publish(topic, req.Body); err == nil {
			queued = strconv.Itoa(int(n))
		}
		extra = append(extra, [2]string{"x-echo-queued", queued})
	}
	headers, err := wharfguest.Headers(req.Headers, extra...)
	if err != nil {
		return witTypes.Err[Response](wharf_plugin_types.MakeErrorBadRequest("malformed request headers"))
	}
	chunks, streamed, err := wharfguest.Header(req.Headers, "x-echo-chunks")
	if err != nil {
		return witTypes.Err[Response](wharf_plugin_types.MakeErrorBadRequest("malformed request headers"))
	}
	if !streamed {
		return witTypes.Ok[Response, Error](Response{Status: 200, Headers: headers, Body: req.Body})
	}
	n, err := strconv.Atoi(chunks)
	if err != nil || n < 1 || n > 64 {
		return witTypes.Err[Response](wharf_plugin_types.MakeErrorBadRequest("malformed request: x-echo-chunks must be 1 to 64"))
	}
	if r := wharf_plugin_streaming.Start(200, headers); r.IsErr() {
		return witTypes.Err[Response](wharf_plugin_types.MakeErrorInternal(r.Err()))
	}
	body := req.Body
	size := max((len(body)+n-1)/n, 1)
	for len(body) > size {
		if r := wharf_plugin_streaming.Write(body[:size]); r.IsErr() {
			return witTypes.Err[Response](wharf_plugin_types.MakeErrorInternal(r.Err()))
		}
		body = body[size:]
	}
	return witTypes.Ok[Response, Error](Response{Status: 200, Body: body})
}

func Describe() wharf_plugin_types.Card {
	return wharf_plugin_types.Card{
		Name:        "echo",
		Version:     "0.1.0",
		Description: "Returns the request body and headers (Go)",
	}
}

func Health() wharf_plugin_types.Health {
	return wharf_plugin_types.MakeHealthOk()
}
