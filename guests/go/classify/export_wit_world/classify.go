// Package export_wit_world is the classify agent (Go): a keyword classifier.
// The body is UTF-8 text; words are runs of ASCII letters and digits,
// lower-cased. The answer is JSON:
// {"words":W,"labels":[{"label":L,"hits":H,"score":S},...]}, labels with hits
// only, most hits first (ties in table order), S = H*1000/total hits.
package export_wit_world

import (
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"wit_component/wharf_plugin_types"
	"wit_component/wharfguest"

	witTypes "go.bytecodealliance.org/pkg/wit/types"
)

type (
	Request  = wharf_plugin_types.Request
	Response = wharf_plugin_types.Response
	Error    = wharf_plugin_types.Error
)

var labels = []struct {
	name     string
	keywords []string
}{
	{"billing", []string{"invoice", "refund", "charge", "payment", "price"}},
	{"outage", []string{"down", "error", "outage", "timeout", "crash"}},
	{"security", []string{"password", "breach", "phishing", "leak", "hacked"}},
}

var labelOf = func() map[string]int {
	m := map[string]int{}
	for i, l := range labels {
		for _, k := range l.keywords {
			m[k] = i
		}
	}
	return m
}()

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func Handle(req Request) witTypes.Result[Response, Error] {
	wharfguest.Paced(len(req.Body))
	body := req.Body
	if !utf8.Valid(body) {
		return witTypes.Err[Response](wharf_plugin_types.MakeErrorBadRequest("body is not UTF-8"))
	}
	hits := make([]int, len(labels))
	words, total := 0, 0
	for i := 0; i < len(body); {
		if !isWordByte(body[i]) {
			i++
			continue
		}
		start := i
		for i < len(body) && isWordByte(body[i]) {
			i++
		}
		words++
		if l, ok := labelOf[strings.ToLower(string(body[start:i]))]; ok {
			hits[l]++
			total++
		}
	}
	order := []int{}
	for l := range labels {
		if hits[l] > 0 {
			order = append(order, l)
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return hits[order[a]] > hits[order[b]] })
	var out strings.Builder
	out.WriteString(`{"words":` + strconv.Itoa(words) + `,"labels":[`)
	for n, l := range order {
		if n > 0 {
			out.WriteByte(',')
		}
		out.WriteString(`{"label":"` + labels[l].name + `","hits":` + strconv.Itoa(hits[l]) +
			`,"score":` + strconv.Itoa(hits[l]*1000/total) + `}`)
	}
	out.WriteString("]}")
	headers, _ := wharfguest.Headers(nil, [2]string{"content-type", "application/json"})
	return witTypes.Ok[Response, Error](Response{Status: 200, Headers: headers, Body: []byte(out.String())})
}

func Describe() wharf_plugin_types.Card {
	return wharf_plugin_types.Card{
		Name:        "classify",
		Version:     "0.1.0",
		Description: "Labels text by keywords, with scores (Go)",
	}
}

func Health() wharf_plugin_types.Health {
	return wharf_plugin_types.MakeHealthOk()
}
