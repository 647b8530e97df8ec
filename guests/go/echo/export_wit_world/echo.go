// Package export_wit_world is the echo agent (Go): it answers 200 with the
// request body and headers, plus x-echo-method and x-echo-path.
package export_wit_world

import (
	"wit_component/wharf_plugin_types"
	"wit_component/wharfguest"

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
	headers, err := wharfguest.Headers(req.Headers,
		[2]string{"x-echo-method", head.Method}, [2]string{"x-echo-path", head.Path})
	if err != nil {
		return witTypes.Err[Response](wharf_plugin_types.MakeErrorBadRequest("malformed request headers"))
	}
	return witTypes.Ok[Response, Error](Response{Status: 200, Headers: headers, Body: req.Body})
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
