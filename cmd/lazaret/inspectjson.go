package main

import (
	"encoding/json"
	"strconv"

	"github.com/lazaret/lazaret/tiff"
)

// appendJSON appends r as json.Encoder writes it (encoding/json's field
// order, omitempty and HTML escaping, and its newline), without reflection
// or an allocation for the common value: inspect writes one line per
// message of an interchange, hundreds of thousands of them.
// TestInspectJSONIsEncodingJSON holds it to encoding/json, field by field,
// and TestInspectJSONCoversEveryField fails when a field added to
// inspectResult (or tiff.Warning) is not written here too.
func (r *inspectResult) appendJSON(b []byte) []byte {
	b = append(b, `{"file":`...)
	b = appendJSONString(b, r.File)
	if r.ObjectID != "" {
		b = append(b, `,"object_id":`...)
		b = appendJSONString(b, r.ObjectID)
	}
	b = append(b, `,"kind":`...)
	b = appendJSONString(b, r.Kind)
	b = append(b, `,"verdict":`...)
	b = appendJSONString(b, r.Verdict)
	b = append(b, `,"class":`...)
	b = appendJSONString(b, r.Class)
	b = append(b, `,"code":`...)
	b = appendJSONString(b, r.Code)
	b = append(b, `,"message":`...)
	b = appendJSONString(b, r.Message)
	b = append(b, `,"offset":`...)
	if r.Offset != nil {
		b = strconv.AppendInt(b, *r.Offset, 10)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"page":`...)
	if r.Page != nil {
		b = strconv.AppendInt(b, int64(*r.Page), 10)
	} else {
		b = append(b, "null"...)
	}
	if r.Tag != "" {
		b = append(b, `,"tag":`...)
		b = appendJSONString(b, r.Tag)
	}
	b = append(b, `,"segment":`...)
	b = strconv.AppendInt(b, int64(r.Segment), 10)
	b = append(b, `,"element":`...)
	b = strconv.AppendInt(b, int64(r.Element), 10)
	b = append(b, `,"component":`...)
	b = strconv.AppendInt(b, int64(r.Component), 10)
	if r.MessageRef != "" {
		b = append(b, `,"message_ref":`...)
		b = appendJSONString(b, r.MessageRef)
	}
	if r.MessageType != "" {
		b = append(b, `,"message_type":`...)
		b = appendJSONString(b, r.MessageType)
	}
	b = append(b, `,"puid":`...)
	b = appendJSONString(b, r.PUID)
	b = append(b, `,"computed_sha256":`...)
	b = appendJSONString(b, r.SHA256)
	b = append(b, `,"computed_size":`...)
	b = strconv.AppendInt(b, r.Size, 10)
	b = append(b, `,"pages":`...)
	b = strconv.AppendInt(b, int64(r.Pages), 10)
	b = append(b, `,"warnings":`...)
	b = appendJSONWarnings(b, r.Warnings)
	return append(b, "}\n"...)
}

// appendJSONWarnings appends ws as encoding/json writes a []tiff.Warning.
func appendJSONWarnings(b []byte, ws []tiff.Warning) []byte {
	if ws == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range ws {
		w := &ws[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"code":`...)
		b = appendJSONString(b, w.Code)
		b = append(b, `,"message":`...)
		b = appendJSONString(b, w.Message)
		if w.Page != nil {
			b = append(b, `,"page":`...)
			b = strconv.AppendInt(b, int64(*w.Page), 10)
		}
		if w.Path != "" {
			b = append(b, `,"path":`...)
			b = appendJSONString(b, w.Path)
		}
		if w.Offset != nil {
			b = append(b, `,"offset":`...)
			b = strconv.AppendInt(b, *w.Offset, 10)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendJSONString appends s quoted as encoding/json quotes it. A string
// of printable ASCII that needs no escape (no quote, backslash or HTML
// character) is copied as it is; any other goes through encoding/json
// itself, so that escapes, invalid UTF-8 and U+2028 come out as it writes
// them.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
