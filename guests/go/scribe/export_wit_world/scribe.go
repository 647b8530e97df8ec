// Package export_wit_world is the HTTP side of the scribe agent (Go): its
// Handle streams the words of the body as server-sent events, then
// `event: done`.
package export_wit_world

import (
	"strconv"
	"strings"

	"wit_component/wharf_plugin_streaming"
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
	headers, _ := wharfguest.Headers(nil, [2]string{"content-type", "text/event-stream"})
	if r := wharf_plugin_streaming.Start(200, headers); r.IsErr() {
		return witTypes.Err[Response](wharf_plugin_types.MakeErrorInternal(r.Err()))
	}
	for _, word := range strings.Fields(string(req.Body)) {
		if r := wharf_plugin_streaming.Write([]byte("data: " + strconv.Quote(word) + "\n\n")); r.IsErr() {
			return witTypes.Err[Response](wharf_plugin_types.MakeErrorInternal(r.Err()))
		}
	}
	return witTypes.Ok[Response, Error](Response{Status: 200, Body: []byte("event: done\ndata: {}\n\n")})
}

func Describe() wharf_plugin_types.Card {
	return wharf_plugin_types.Card{
		Name:        "scribe-go",
		Version:     "0.1.0",
		Description: "Writes what it is sent back, word by word, as a streamed artifact (Go)",
		Skills: []wharf_plugin_types.Skill{{
			Id:          "write",
			Name:        "Write",
			Description: "Streams the words it is sent back as artifact chunks",
			Tags:        []string{"streaming", "text"},
		}},
	}
}

func Health() wharf_plugin_types.Health {
	return wharf_plugin_types.MakeHealthOk()
}
