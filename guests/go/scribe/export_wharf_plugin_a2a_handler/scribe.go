// Package export_wharf_plugin_a2a_handler is the A2A side of the scribe
// agent (Go): sent text, it writes the text back word by word as chunks of
// one artifact, each reaching streaming clients as it is reported, then
// completes; `count N` streams N chunks, `ping` is answered `pong` as a
// direct reply (a message, no task), `fail` fails the task, `reject`
// rejects it, `trap` traps.
package export_wharf_plugin_a2a_handler

import (
	"fmt"
	"strconv"
	"strings"

	"wit_component/wharf_plugin_a2a"
	"wit_component/wharf_plugin_types"
	"wit_component/wharfa2a"
	"wit_component/wharfguest"

	witTypes "go.bytecodealliance.org/pkg/wit/types"
)

type (
	Outcome = wharf_plugin_a2a.Outcome
	Error   = wharf_plugin_types.Error
)

func chunks(id string, pieces []string) {
	for i, piece := range pieces {
		wharf_plugin_a2a.AddArtifact(wharfa2a.Artifact(id, id, piece), i > 0, i == len(pieces)-1)
	}
}

func OnMessage(turn wharf_plugin_a2a.Turn) witTypes.Result[Outcome, Error] {
	wharfguest.Paced(0)
	words := strings.Fields(wharfa2a.Text(turn.Message))
	switch {
	case len(words) == 2 && words[0] == "count":
		n, err := strconv.Atoi(words[1])
		if err != nil || n < 0 {
			return witTypes.Err[Outcome](wharf_plugin_types.MakeErrorBadRequest(fmt.Sprintf("`%s` is not a count", words[1])))
		}
		pieces := make([]string, n)
		for i := range pieces {
			pieces[i] = fmt.Sprintf("%d\n", i)
		}
		chunks("count", pieces)
		return witTypes.Ok[Outcome, Error](wharfa2a.Outcome(wharf_plugin_a2a.TurnStateCompleted, fmt.Sprintf("counted to %d", n)))
	case len(words) == 1 && words[0] == "ping":
		return witTypes.Ok[Outcome, Error](wharfa2a.Reply("pong"))
	case len(words) == 1 && words[0] == "fail":
		return witTypes.Err[Outcome](wharf_plugin_types.MakeErrorUnavailable("asked to fail"))
	case len(words) == 1 && words[0] == "reject":
		return witTypes.Err[Outcome](wharf_plugin_types.MakeErrorBadRequest("I will not write that"))
	case len(words) == 1 && words[0] == "trap":
		panic("asked to trap")
	case len(words) == 0:
		return witTypes.Ok[Outcome, Error](wharfa2a.Outcome(wharf_plugin_a2a.TurnStateInputRequired, "What shall I write?"))
	}
	wharf_plugin_a2a.Working(witTypes.Some(wharfa2a.Message(fmt.Sprintf("writing %d words", len(words)))))
	pieces := make([]string, len(words))
	for i, w := range words {
		pieces[i] = w + " "
	}
	chunks("text", pieces)
	return witTypes.Ok[Outcome, Error](wharfa2a.Outcome(wharf_plugin_a2a.TurnStateCompleted, fmt.Sprintf("wrote %d words", len(words))))
}
