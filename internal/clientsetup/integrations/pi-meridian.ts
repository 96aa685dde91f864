// Meridian's Pi extension, installed by `meridian setup pi`.
//
// Every request to the Meridian provider carries an id
// (x-meridian-request-id) chosen before the SDK sends it, so the SDK's own
// retries of a request whose answer was lost carry the same id and
// Meridian answers them from the saved answer instead of running the turn
// again. When a request fails, only its hash and id are kept, and a later
// request with exactly that hash (Pi's own retry of the failed turn) gets
// the same id; anything else — a new prompt, a session switch, fork,
// compaction or tree move, a changed payload, a turn that ended well or
// was aborted — gets a new one.
import { createHash, randomUUID } from "node:crypto"
import { getApiProvider } from "@mariozechner/pi-ai"

export default function meridian(pi) {
  const api = "anthropic-messages"
  const builtin = getApiProvider(api)
  if (!builtin) return
  let held // { hash, id } of the last request that failed
  const reset = () => {
    held = undefined
  }
  for (const event of ["session_start", "input", "session_compact", "session_tree"]) pi.on(event, reset)

  const withID = (model, context, options) => {
    if (model.provider !== "meridian") return builtin.streamSimple(model, context, options)
    const hash = createHash("sha256").update(JSON.stringify([model.id, context])).digest("hex")
    const id = held && held.hash === hash ? held.id : randomUUID()
    const stream = builtin.streamSimple(model, context, {
      ...options,
      headers: { ...options?.headers, "x-meridian-request-id": "pi/" + id },
    })
    stream.result().then(
      (message) => {
        held = message?.stopReason === "error" ? { hash, id } : undefined
      },
      () => {
        held = { hash, id }
      },
    )
    return stream
  }
  pi.registerProvider("meridian", { api, streamSimple: withID })
}
