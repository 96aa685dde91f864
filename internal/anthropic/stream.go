package anthropic

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// Stop reasons of the Messages API.
const (
	StopEndTurn      = "end_turn"
	StopMaxTokens    = "max_tokens"
	StopSequence     = "stop_sequence"
	StopToolUse      = "tool_use"
	StopPauseTurn    = "pause_turn"
	StopRefusal      = "refusal"
	StopContextLimit = "model_context_window_exceeded"
)

// The Append* functions write one complete SSE frame ("event: …\ndata: …\n\n")
// to dst. Raw arguments must be valid JSON; they are embedded as they are,
// which keeps relaying a block or delta free of a decode/encode round trip.

// AppendMessageStart writes the message_start frame.
func AppendMessageStart(dst []byte, id, model string, u Usage) []byte {
	dst = append(dst, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":"...)
	dst = AppendString(dst, id)
	dst = append(dst, `,"type":"message","role":"assistant","model":`...)
	dst = AppendString(dst, model)
	dst = append(dst, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":`...)
	dst = appendUsage(dst, u)
	return append(dst, "}}\n\n"...)
}

// AppendBlockStart writes a content_block_start frame.
func AppendBlockStart(dst []byte, index int, block json.RawMessage) []byte {
	dst = append(dst, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":"...)
	dst = strconv.AppendInt(dst, int64(index), 10)
	dst = append(dst, `,"content_block":`...)
	dst = append(dst, block...)
	return append(dst, "}\n\n"...)
}

// AppendBlockDelta writes a content_block_delta frame.
func AppendBlockDelta(dst []byte, index int, delta json.RawMessage) []byte {
	dst = append(dst, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":"...)
	dst = strconv.AppendInt(dst, int64(index), 10)
	dst = append(dst, `,"delta":`...)
	dst = append(dst, delta...)
	return append(dst, "}\n\n"...)
}

// AppendBlockStop writes a content_block_stop frame.
func AppendBlockStop(dst []byte, index int) []byte {
	dst = append(dst, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":"...)
	dst = strconv.AppendInt(dst, int64(index), 10)
	return append(dst, "}\n\n"...)
}

// AppendMessageDelta writes the message_delta frame. Its usage carries the
// whole message's final counts, input included, so a client that only
// accumulates deltas ends with exact totals even when message_start went out
// before the input count was known.
func AppendMessageDelta(dst []byte, stopReason, stopSequence string, u Usage) []byte {
	dst = append(dst, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"...)
	dst = AppendString(dst, stopReason)
	dst = append(dst, `,"stop_sequence":`...)
	dst = appendNullableString(dst, stopSequence)
	dst = append(dst, `},"usage":`...)
	dst = appendUsage(dst, u)
	return append(dst, "}\n\n"...)
}

// AppendMessageStop writes the message_stop frame.
func AppendMessageStop(dst []byte) []byte {
	return append(dst, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"...)
}

// AppendPing writes a ping frame.
func AppendPing(dst []byte) []byte {
	return append(dst, "event: ping\ndata: {\"type\":\"ping\"}\n\n"...)
}

// AppendErrorEvent writes an error frame. retryAfter, in whole seconds, is
// included when positive: a stream's headers left long before the failure,
// so the wait travels in the frame.
func AppendErrorEvent(dst []byte, typ, message string, retryAfter int) []byte {
	dst = append(dst, "event: error\ndata: "...)
	dst = AppendError(dst, typ, message, retryAfter)
	return append(dst, "\n\n"...)
}

// AppendError writes the error envelope {"type":"error","error":{…}}.
func AppendError(dst []byte, typ, message string, retryAfter int) []byte {
	dst = append(dst, `{"type":"error","error":{"type":`...)
	dst = AppendString(dst, typ)
	dst = append(dst, `,"message":`...)
	dst = AppendString(dst, message)
	if retryAfter > 0 {
		dst = append(dst, `,"retry_after":`...)
		dst = strconv.AppendInt(dst, int64(retryAfter), 10)
	}
	return append(dst, "}}"...)
}

func appendUsage(dst []byte, u Usage) []byte {
	dst = append(dst, `{"input_tokens":`...)
	dst = strconv.AppendInt(dst, int64(u.InputTokens), 10)
	dst = append(dst, `,"cache_creation_input_tokens":`...)
	dst = strconv.AppendInt(dst, int64(u.CacheCreationInputTokens), 10)
	dst = append(dst, `,"cache_read_input_tokens":`...)
	dst = strconv.AppendInt(dst, int64(u.CacheReadInputTokens), 10)
	dst = append(dst, `,"output_tokens":`...)
	dst = strconv.AppendInt(dst, int64(u.OutputTokens), 10)
	if u.ServerToolUse != nil {
		dst = append(dst, `,"server_tool_use":{"web_search_requests":`...)
		dst = strconv.AppendInt(dst, int64(u.ServerToolUse.WebSearchRequests), 10)
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

func appendNullableString(dst []byte, s string) []byte {
	if s == "" {
		return append(dst, "null"...)
	}
	return AppendString(dst, s)
}

const hexDigits = "0123456789abcdef"

// AppendString writes s as a JSON string. Invalid UTF-8 becomes U+FFFD, and
// U+2028/U+2029 are escaped, as encoding/json does.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
