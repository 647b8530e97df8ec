// Package wharfa2a holds helpers for Go agents of Wharf's `a2a-agent` world,
// used beside the bindings `wharf bindgen --lang go --world a2a-agent`
// generates: reading a message's text and building messages, artifacts and
// outcomes. Report progress with wharf_plugin_a2a.Working and AddArtifact.
package wharfa2a

import (
	"strings"

	"wit_component/wharf_plugin_a2a"

	witTypes "go.bytecodealliance.org/pkg/wit/types"
)

// Text is the text of a message's text parts, joined by newlines.
func Text(m wharf_plugin_a2a.Message) string {
	var parts []string
	for _, p := range m.Parts {
		if p.Content.Tag() == wharf_plugin_a2a.ContentText {
			parts = append(parts, p.Content.Text())
		}
	}
	return strings.Join(parts, "\n")
}

// Part is a text part.
func Part(text string) wharf_plugin_a2a.Part {
	return wharf_plugin_a2a.Part{Content: wharf_plugin_a2a.MakeContentText(text)}
}

// Message is an agent message holding text (the host gives it an id).
func Message(text string) wharf_plugin_a2a.Message {
	return wharf_plugin_a2a.Message{Role: wharf_plugin_a2a.RoleAgent, Parts: []wharf_plugin_a2a.Part{Part(text)}}
}

// Artifact is an artifact (or a chunk of one) holding text.
func Artifact(id, name, text string) wharf_plugin_a2a.Artifact {
	return wharf_plugin_a2a.Artifact{ArtifactId: id, Name: name, Parts: []wharf_plugin_a2a.Part{Part(text)}}
}

// Reply ends a turn with a direct reply: text answers the client as a
// message and no task is kept (on a new task's first turn that reported
// nothing; else the task completes with it).
func Reply(text string) wharf_plugin_a2a.Outcome {
	return Outcome(wharf_plugin_a2a.TurnStateDirectReply, text)
}

// Outcome is how a turn ends, with text as its status message.
func Outcome(state wharf_plugin_a2a.TurnState, text string) wharf_plugin_a2a.Outcome {
	return wharf_plugin_a2a.Outcome{State: state, Message: witTypes.Some(Message(text))}
}
