// Package wharfguest holds helpers for Go agents on Wharf, used beside the
// bindings that `wharf bindgen --lang go` generates: reading the request
// head, extending header lists, and pacing Go's garbage collector.
package wharfguest

import (
	"encoding/binary"
	"errors"
	"runtime"
	"runtime/debug"
)

var errMalformed = errors.New("malformed MessagePack")

// gcEvery is how many bytes of request bodies an instance handles between
// collections.
const gcEvery = 4 << 20

// gcCalls is how many calls an instance handles between collections, so that
// small requests are collected too.
const gcCalls = 1024

var handledBytes, handledCalls int

func init() {
	// Go's collector reads the wall clock. Left automatic, it can start while
	// the host is allocating argument memory inside the guest, where no
	// import may be called, and the instance traps ("cannot leave component
	// instance"). Collections run from Paced instead, inside an export.
	debug.SetGCPercent(-1)
}

// Paced accounts one call that received `bytes` of input, and collects
// garbage when enough has been handled. Call it first in every export that
// allocates.
func Paced(bytes int) {
	handledBytes += bytes
	handledCalls++
	if handledBytes >= gcEvery || handledCalls >= gcCalls {
		handledBytes, handledCalls = 0, 0
		runtime.GC()
	}
}

func readBE(b []byte, n int) (uint64, []byte, error) {
	if len(b) < n {
		return 0, nil, errMalformed
	}
	var v uint64
	for _, c := range b[:n] {
		v = v<<8 | uint64(c)
	}
	return v, b[n:], nil
}

// readLen reads a map (family 0x80) or array (family 0x90) length.
func readLen(b []byte, family byte) (uint64, []byte, error) {
	if len(b) == 0 {
		return 0, nil, errMalformed
	}
	tag := b[0]
	wide := byte(0xdc)
	if family == 0x80 {
		wide = 0xde
	}
	switch {
	case tag&0xf0 == family:
		return uint64(tag & 0x0f), b[1:], nil
	case tag == wide:
		return readBE(b[1:], 2)
	case tag == wide+1:
		return readBE(b[1:], 4)
	}
	return 0, nil, errMalformed
}

func readStr(b []byte) (string, []byte, error) {
	if len(b) == 0 {
		return "", nil, errMalformed
	}
	tag := b[0]
	var n uint64
	var err error
	rest := b[1:]
	switch {
	case tag&0xe0 == 0xa0:
		n = uint64(tag & 0x1f)
	case tag >= 0xd9 && tag <= 0xdb:
		n, rest, err = readBE(rest, 1<<(tag-0xd9))
		if err != nil {
			return "", nil, err
		}
	case tag >= 0xc4 && tag <= 0xc6: // bin, as header values are
		n, rest, err = readBE(rest, 1<<(tag-0xc4))
		if err != nil {
			return "", nil, err
		}
	default:
		return "", nil, errMalformed
	}
	if uint64(len(rest)) < n {
		return "", nil, errMalformed
	}
	return string(rest[:n]), rest[n:], nil
}

// Head is the decoded request head.
type Head struct {
	Method, Path, Query, ID, Client, Affinity string
}

// DecodeHead decodes the MessagePack map the host sends as `request.head`;
// unknown keys are skipped.
func DecodeHead(b []byte) (Head, error) {
	var h Head
	n, b, err := readLen(b, 0x80)
	if err != nil {
		return h, err
	}
	for i := uint64(0); i < n; i++ {
		var k, v string
		if k, b, err = readStr(b); err != nil {
			return h, err
		}
		if v, b, err = readStr(b); err != nil {
			return h, err
		}
		switch k {
		case "method":
			h.Method = v
		case "path":
			h.Path = v
		case "query":
			h.Query = v
		case "id":
			h.ID = v
		case "client":
			h.Client = v
		case "affinity":
			h.Affinity = v
		}
	}
	return h, nil
}

func putLen(out []byte, n uint64) []byte {
	switch {
	case n < 16:
		return append(out, 0x90|byte(n))
	case n < 0x10000:
		return binary.BigEndian.AppendUint16(append(out, 0xdc), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(out, 0xdd), uint32(n))
}

func putStr(out []byte, s string) []byte {
	n := len(s)
	switch {
	case n < 32:
		out = append(out, 0xa0|byte(n))
	case n < 0x100:
		out = append(out, 0xd9, byte(n))
	case n < 0x10000:
		out = binary.BigEndian.AppendUint16(append(out, 0xda), uint16(n))
	default:
		out = binary.BigEndian.AppendUint32(append(out, 0xdb), uint32(n))
	}
	return append(out, s...)
}

// Header returns the value of header `name` (lower-case) in a header list,
// and whether it is there.
func Header(headers []byte, name string) (string, bool, error) {
	if len(headers) == 0 {
		return "", false, nil
	}
	n, b, err := readLen(headers, 0x90)
	if err != nil {
		return "", false, err
	}
	for i := uint64(0); i < n; i++ {
		var two uint64
		var k, v string
		if two, b, err = readLen(b, 0x90); err != nil || two != 2 {
			return "", false, errMalformed
		}
		if k, b, err = readStr(b); err != nil {
			return "", false, err
		}
		if v, b, err = readStr(b); err != nil {
			return "", false, err
		}
		if k == name {
			return v, true, nil
		}
	}
	return "", false, nil
}

// Headers builds a response header list: the pairs of `headers` (request
// encoding, possibly empty) followed by `extra` name/value pairs.
func Headers(headers []byte, extra ...[2]string) ([]byte, error) {
	var pairs uint64
	rest := headers
	if len(headers) > 0 {
		var err error
		if pairs, rest, err = readLen(headers, 0x90); err != nil {
			return nil, err
		}
	}
	out := putLen(make([]byte, 0, len(headers)+64), pairs+uint64(len(extra)))
	out = append(out, rest...)
	for _, kv := range extra {
		out = putStr(putStr(append(out, 0x92), kv[0]), kv[1])
	}
	return out, nil
}
