// Meridian's spawn watcher for Pi, installed by `meridian setup pi`.
//
// When children that `meridian spawn` started for this session's lead
// finish, it tells Pi as a custom message that starts a turn (or follows
// the one running). Meridian decides what is owed and what the text says
// (`meridian spawn collect`); this only carries deliveries and writes their
// receipts. Admission is the acknowledgement: a delivery is acked, as a
// receipt naming it (`meridian spawn ack --receipt`), only when Pi starts
// the message that carries it, so a Pi that dies or drops the message
// before then leaves those results owed, and they are delivered again.
//
// It runs only where a session has a UI (interactive and RPC modes): under
// `pi -p` a waiting collector would keep Pi from exiting.
import { spawn } from "node:child_process"
import { randomUUID } from "node:crypto"

const TYPE = "meridian-spawn-watch"
const IDLE_RECHECK_MS = 10_000 // nothing running: look again this often, or when a turn ends
const FAILED_RETRY_MS = 30_000 // a collector that failed is retried after this
const MAX_OUTPUT = 1 << 20
const ID = /^p[1-9][0-9]*$/

export default function spawnWatch(pi) {
  let running = false
  let stopped = false
  let collector // the collector process while one runs
  let wake = () => {}
  let ui // the session's UI, for the status line
  let generation = 0 // agent runs begun
  const inflight = new Map() // delivery id -> { ids, generation }
  const refused = new Set() // ids whose receipt failed: not delivered again in this session

  pi.on("session_start", (_event, ctx) => {
    if (!ctx.hasUI || running) return
    ui = ctx.ui
    running = true
    stopped = false
    void watch()
  })
  pi.on("session_shutdown", () => {
    stopped = true
    collector?.kill()
    wake()
  })
  // A turn may have started children: look again when it ends.
  pi.on("turn_end", () => wake())
  pi.on("agent_start", () => {
    generation++
  })
  // A delivery sent before a run that then ended without admitting it was
  // dropped (an abort clears queued messages): it is owed again.
  pi.on("agent_end", () => {
    for (const [id, d] of inflight) if (d.generation < generation) inflight.delete(id)
    status()
    wake()
  })
  pi.on("message_start", async (event) => {
    const m = event.message
    if (m?.role !== "custom" || m.customType !== TYPE) return
    const id = m.details?.delivery_id
    const d = inflight.get(id)
    if (!d) return
    const ok = await meridian(["spawn", "ack", "--receipt", id, ...d.ids])
    inflight.delete(id)
    if (!ok.ok) for (const i of d.ids) refused.add(i)
    status()
  })

  // The status line names the results sent and not yet admitted.
  function status() {
    const ids = [...inflight.values()].flatMap((d) => d.ids)
    ui?.setStatus(TYPE, ids.length > 0 ? `spawns finished: ${ids.join(" ")} (delivery queued)` : undefined)
  }

  async function watch() {
    while (!stopped) {
      const exclude = [...refused]
      for (const d of inflight.values()) exclude.push(...d.ids)
      const args = ["spawn", "collect"]
      if (exclude.length > 0) args.push("--exclude", exclude.join(","))
      const got = await meridian(args, (c) => (collector = c))
      collector = undefined
      if (stopped) break
      const d = got.ok ? parse(got.out) : null
      if (d?.kind === "delivery") {
        const delivery_id = randomUUID()
        inflight.set(delivery_id, { ids: d.ids, generation })
        pi.sendMessage(
          { customType: TYPE, content: d.text, display: true, details: { delivery_id, ids: d.ids } },
          { triggerTurn: true, deliverAs: "followUp" },
        )
        status()
        continue
      }
      await pause(d ? IDLE_RECHECK_MS : FAILED_RETRY_MS)
    }
    running = false
  }

  function pause(ms) {
    return new Promise((resolve) => {
      const t = setTimeout(done, ms)
      function done() {
        clearTimeout(t)
        wake = () => {}
        resolve()
      }
      wake = done
    })
  }
}

// parse accepts one collect verdict and nothing else.
function parse(out) {
  let v
  try {
    v = JSON.parse(out)
  } catch {
    return null
  }
  if (v?.kind === "empty") return v
  if (v?.kind !== "delivery" || typeof v.text !== "string" || !Array.isArray(v.ids) || v.ids.length === 0) return null
  return v.ids.every((id) => typeof id === "string" && ID.test(id)) ? v : null
}

// meridian runs one meridian command from PATH, its output bounded.
function meridian(args, started) {
  return new Promise((resolve) => {
    const child = spawn("meridian", args, { stdio: ["ignore", "pipe", "ignore"] })
    started?.(child)
    let out = ""
    let over = false
    child.stdout.on("data", (b) => {
      out += b
      if (out.length > MAX_OUTPUT) {
        over = true
        child.kill()
      }
    })
    child.on("error", () => resolve({ ok: false, out: "" }))
    child.on("close", (code) => resolve({ ok: code === 0 && !over, out }))
  })
}
