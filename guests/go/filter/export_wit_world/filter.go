// Package export_wit_world is the filter (Go): it refuses paths below
// /admin with a JSON 403 naming the rule, attaches the request method as
// metadata, and marks every response with x-filtered-by: go. The same
// filter as guests/python/filter and guests/js/filter.
package export_wit_world

import (
	"strings"

	"wit_component/wharf_plugin_filtering"
	"wit_component/wharf_plugin_types"
	"wit_component/wharfguest"

	witTypes "go.bytecodealliance.org/pkg/wit/types"
)

type Verdict = wharf_plugin_filtering.Verdict

func allow() Verdict {
	return Verdict{Decision: wharf_plugin_filtering.MakeDecisionAllow()}
}

func Phases() wharf_plugin_filtering.Phases {
	return wharf_plugin_filtering.PhasesRequestHeaders | wharf_plugin_filtering.PhasesResponseHeaders
}

func OnRequestHeaders(head []uint8, headers []uint8) Verdict {
	fields, err := wharfguest.DecodeHead(head)
	if err != nil {
		// Traps: the filter's failure mode applies.
		panic("malformed request head")
	}
	if strings.HasPrefix(fields.Path, "/admin") {
		blockHeaders, _ := wharfguest.Headers(nil, [2]string{"content-type", "application/json"})
		v := allow()
		v.Decision = wharf_plugin_filtering.MakeDecisionBlock(wharf_plugin_types.Response{
			Status:  403,
			Headers: blockHeaders,
			Body:    []byte(`{"error":{"code":"forbidden","message":"admin paths are closed"}}`),
		})
		v.Audit.RuleIds = []string{"admin-path"}
		v.Audit.Reason = "admin path"
		return v
	}
	v := allow()
	v.Metadata = []witTypes.Tuple2[string, string]{{F0: "go.method", F1: fields.Method}}
	return v
}

func OnRequestBody(head []uint8, headers []uint8, body []uint8) Verdict {
	return allow()
}

func OnResponseHeaders(head []uint8, headers []uint8, status uint16, respHeaders []uint8) Verdict {
	v := allow()
	v.ResponseHeaderOps = []wharf_plugin_filtering.HeaderOp{
		wharf_plugin_filtering.MakeHeaderOpSet(witTypes.Tuple2[string, []uint8]{F0: "x-filtered-by", F1: []byte("go")}),
	}
	return v
}

func OnResponseBody(head []uint8, headers []uint8, status uint16, respHeaders []uint8, body []uint8) Verdict {
	return allow()
}
