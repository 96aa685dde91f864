package anthropic

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
// Statuses are plain numbers: this package stays clear of net/http.
func ErrorTypeForStatus(status int) string {
	switch status {
	case 400:
		return ErrInvalidRequest
	case 401:
		return ErrAuthentication
	case 403:
		return ErrPermission
	case 404, 405:
		return ErrNotFound
	case 413:
		return ErrRequestTooLarge
	case 429:
		return ErrRateLimit
	case 504:
		return ErrTimeout
	case StatusOverloaded:
		return ErrOverloaded
	}
	return ErrAPI
}
