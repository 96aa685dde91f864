package openai

import (
	"strconv"

	"github.com/meridian-gw/meridian/internal/anthropic"
)

// errorKind names an HTTP status in the OpenAI error vocabulary: the
// envelope's type and, where one helps a client decide, its code. Statuses
// are plain numbers: this package stays clear of net/http.
func errorKind(status int) (typ, code string) {
	switch status {
	case 400:
		return "invalid_request_error", ""
	case 401:
		return "authentication_error", "invalid_api_key"
	case 403:
		return "permission_error", ""
	case 404:
		return "invalid_request_error", "not_found"
	case 405:
		return "invalid_request_error", "method_not_allowed"
	case 409:
		return "invalid_request_error", "conflict"
	case 413:
		return "invalid_request_error", "request_too_large"
	case 429:
		return "rate_limit_error", "rate_limit_exceeded"
	case 502:
		return "server_error", "upstream_error"
	case 503:
		return "server_error", "service_unavailable"
	case 504:
		return "server_error", "timeout"
	case anthropic.StatusOverloaded:
		return "server_error", "overloaded"
	}
	if status >= 500 {
		return "server_error", ""
	}
	return "invalid_request_error", ""
}

// AppendError writes the error envelope
// {"error":{"message","type","param","code"}}. param names the request
// field at fault, when known; retryAfter, in seconds, is included when
// positive (a stream's error chunk carries its wait inside).
func AppendError(dst []byte, status int, message, param string, retryAfter int) []byte {
	typ, code := errorKind(status)
	dst = append(dst, `{"error":{"message":`...)
	dst = anthropic.AppendString(dst, message)
	dst = append(dst, `,"type":`...)
	dst = anthropic.AppendString(dst, typ)
	dst = append(dst, `,"param":`...)
	dst = appendNullable(dst, param)
	dst = append(dst, `,"code":`...)
	dst = appendNullable(dst, code)
	if retryAfter > 0 {
		dst = append(dst, `,"retry_after":`...)
		dst = strconv.AppendInt(dst, int64(retryAfter), 10)
	}
	return append(dst, "}}"...)
}

// AppendErrorChunk ends a stream that failed after it began: an error
// event, then the end marker.
func AppendErrorChunk(dst []byte, status int, message string, retryAfter int) []byte {
	dst = append(dst, "data: "...)
	dst = AppendError(dst, status, message, "", retryAfter)
	dst = append(dst, "\n\n"...)
	return AppendDone(dst)
}

// AppendDone writes the stream's end marker.
func AppendDone(dst []byte) []byte { return append(dst, "data: [DONE]\n\n"...) }

// AppendPing writes an SSE comment: it keeps a quiet stream's connection
// alive and every SSE reader skips it.
func AppendPing(dst []byte) []byte { return append(dst, ": ping\n\n"...) }

func appendNullable(dst []byte, s string) []byte {
	if s == "" {
		return append(dst, "null"...)
	}
	return anthropic.AppendString(dst, s)
}
