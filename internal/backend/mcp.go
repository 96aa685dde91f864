package backend

import "encoding/json"

// Block is what the drivers read of a Messages content block in the
// input they are given: its text, and an image's or document's source.
type Block struct {
	Type   string `json:"type"`
	Text   string `json:"text"`
	Title  string `json:"title"`
	Source struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
		URL       string `json:"url"`
	} `json:"source"`
}

// MCPContent is the result's blocks as MCP tool-result content: text and
// base64 images as they are, anything else as its JSON text.
func (r ToolResult) MCPContent() []map[string]any {
	blocks := r.Content
	out := make([]map[string]any, 0, len(blocks))
	for _, raw := range blocks {
		var b Block
		_ = json.Unmarshal(raw, &b)
		switch {
		case b.Type == "text":
			out = append(out, map[string]any{"type": "text", "text": b.Text})
		case b.Type == "image" && b.Source.Type == "base64":
			out = append(out, map[string]any{"type": "image", "data": b.Source.Data, "mimeType": b.Source.MediaType})
		default:
			// MCP has no place for it as it is; the model still reads it.
			out = append(out, map[string]any{"type": "text", "text": string(raw)})
		}
	}
	if len(out) == 0 {
		out = append(out, map[string]any{"type": "text", "text": ""})
	}
	return out
}
