package gateway

import (
	"github.com/meridian-gw/meridian/internal/anthropic"
)

// The CLI offers no token counting, so count_tokens answers with an
// estimate. These constants make it a rough, documented one: about four
// bytes of text per token, a fixed cost per image (the API's cost for an
// image near its default size limit) and a small framing cost per message.
const (
	bytesPerToken    = 4
	tokensPerImage   = 1600
	tokensPerMessage = 4
)

// EstimateTokens estimates the input tokens of a request.
func EstimateTokens(req *anthropic.MessagesRequest) int {
	n := 0
	for _, s := range req.System {
		n += textTokens(len(s))
	}
	for _, t := range req.Tools {
		n += textTokens(len(t))
	}
	for _, m := range req.Messages {
		n += tokensPerMessage + blocksTokens(m.Content)
	}
	return n
}

func blocksTokens(blocks []anthropic.ContentBlock) int {
	n := 0
	for _, b := range blocks {
		switch b.Type {
		case anthropic.BlockText:
			n += textTokens(len(b.Text))
		case anthropic.BlockImage:
			n += tokensPerImage
		case anthropic.BlockToolResult:
			n += textTokens(len(b.ToolUseID)) + blocksTokens(b.Content)
		case anthropic.BlockToolUse:
			n += textTokens(len(b.Name) + len(b.Input))
		case anthropic.BlockThinking:
			// Earlier turns' thinking does not count toward the context.
		default:
			n += textTokens(len(b.Raw))
		}
	}
	return n
}

func textTokens(bytes int) int { return (bytes + bytesPerToken - 1) / bytesPerToken }
