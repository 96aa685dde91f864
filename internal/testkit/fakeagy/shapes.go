package main

import "encoding/json"

// The shapes agy writes, as structs so that keys come in agy's order and
// optional ones are left out rather than null.

type initEvent struct {
	Event          string   `json:"event"`
	ConversationID string   `json:"conversation_id"`
	Init           initBody `json:"init"`
}

type initBody struct {
	Model          string          `json:"model,omitempty"`
	Cwd            string          `json:"cwd"`
	Tools          []string        `json:"tools"`
	PermissionMode string          `json:"permission_mode"`
	JSONSchema     json.RawMessage `json:"json_schema,omitempty"`
}

type stepEvent struct {
	Event string   `json:"event"`
	Step  stepBody `json:"step_update"`
}

type stepBody struct {
	ConversationID string    `json:"conversation_id"`
	Index          int       `json:"step_index"`
	State          string    `json:"state"`
	Type           string    `json:"step_type"`
	ToolName       string    `json:"tool_name,omitempty"`
	TextDelta      string    `json:"text_delta,omitempty"`
	Duration       float64   `json:"duration_seconds,omitempty"`
	Usage          *usage    `json:"usage,omitempty"`
	ToolInfo       *toolInfo `json:"tool_info,omitempty"`
}

type toolInfo struct {
	Name       string          `json:"name"`
	Parameters json.RawMessage `json:"parameters"`
	Output     *string         `json:"output,omitempty"`
	Error      *toolError      `json:"error,omitempty"`
}

type toolError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

type resultEvent struct {
	Event  string     `json:"event"`
	Result resultBody `json:"result"`
}

type resultBody struct {
	ConversationID string  `json:"conversation_id"`
	Status         string  `json:"status"`
	Response       string  `json:"response"`
	Error          string  `json:"error,omitempty"`
	Duration       float64 `json:"duration_seconds"`
	NumTurns       int     `json:"num_turns"`
	// With --json-schema: the parsed answer and the schema, echoed.
	StructuredOutput json.RawMessage `json:"structured_output,omitempty"`
	JSONSchema       json.RawMessage `json:"json_schema,omitempty"`
	Usage            usage           `json:"usage"`
	Command          any             `json:"command,omitempty"`
}

type commandEvent struct {
	Event   string `json:"event"`
	Command any    `json:"command"`
}

// builtinTools are agy 1.2.17's own tools, as its init lists them.
var builtinTools = []string{"ask_custom_permission", "ask_permission", "ask_question", "browser_click_element",
	"browser_drag_pixel_to_pixel", "browser_get_dom", "browser_get_network_request", "browser_input",
	"browser_list_network_requests", "browser_mouse_down", "browser_mouse_up", "browser_move_mouse", "browser_press_key",
	"browser_refresh_page", "browser_resize_window", "browser_scroll", "browser_scroll_dom", "browser_select_option",
	"browser_subagent", "call_mcp_tool", "capture_browser_console_logs", "capture_browser_screenshot", "click_browser_pixel",
	"command_status", "define_subagent", "delete_knowledge", "execute_browser_javascript", "find_by_name", "finish",
	"generate_image", "grep_search", "invoke_subagent", "list_browser_pages", "list_dir", "list_permissions",
	"list_plugin_accounts", "list_resources", "manage_inbox", "manage_subagents", "manage_task", "multi_replace_file_content",
	"notebook_edit", "notebook_execution", "open_browser_url", "read_browser_page", "read_resource", "read_url_content",
	"replace_file_content", "run_command", "run_workflow", "schedule", "search_marketplace", "search_web", "sed_file",
	"send_command_input", "send_message", "view_file", "wait", "wait_5_seconds", "write_to_file"}
