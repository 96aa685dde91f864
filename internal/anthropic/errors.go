package anthropic

import "net/http"

// Error types of the Messages API error envelope.
const (
	ErrInvalidRequest  = "invalid_request_error"
	ErrAuthentication  = "authentication_error"
	ErrPermission      = "permission_error"
	ErrNotFound        = "not_found_error"
	ErrRequestTooLarge = "request_too_large"
	ErrRateLimit       = "rate_limit_error"
	ErrAPI             = "api_error"
	ErrOverloaded      = "overloaded_error"
	ErrTimeout         = "timeout_error"
)

// StatusOverloaded is Anthropic's non-standard "overloaded" HTTP status.
const StatusOverloaded = 529

// ErrorTypeForStatus names the error type the API uses for an HTTP status.
func ErrorTypeForStatus(status int) string {
	switch status {
	case http.StatusBadRequest:
		return ErrInvalidRequest
	case http.StatusUnauthorized:
		return ErrAuthentication
	case http.StatusForbidden:
		return ErrPermission
	case http.StatusNotFound, http.StatusMethodNotAllowed:
		return ErrNotFound
	case http.StatusRequestEntityTooLarge:
		return ErrRequestTooLarge
	case http.StatusTooManyRequests:
		return ErrRateLimit
	case http.StatusGatewayTimeout:
		return ErrTimeout
	case StatusOverloaded:
		return ErrOverloaded
	}
	return ErrAPI
}
