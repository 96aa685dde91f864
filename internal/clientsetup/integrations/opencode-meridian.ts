// Meridian's OpenCode plugin, installed by `meridian setup opencode`.
//
// On every request to the Meridian provider it names the agent that
// asks, so OpenCode's one-shot agents (title, summary, compaction) get
// conversations of their own instead of breaking the main one, and it
// gives the request an id built from the user message it answers. OpenCode
// keeps that message across its own retries, and Meridian keys saved
// answers by id and body, so a retried request is answered from what the
// first attempt produced rather than run again; a later step of the same
// turn has another body, so it is a request of its own.
const oneShot = new Set(["title", "summary", "compaction"])

export const MeridianPlugin = async () => ({
  "chat.headers": async (input, output) => {
    if (input.model?.providerID !== "meridian") return
    output.headers["x-opencode-agent-name"] = input.agent
    output.headers["x-opencode-agent-mode"] = oneShot.has(input.agent) ? "subagent" : "primary"
    if (input.message?.id) {
      output.headers["x-meridian-request-id"] = `opencode/${input.sessionID}/${input.message.id}/${input.agent}`
    }
  },
})
