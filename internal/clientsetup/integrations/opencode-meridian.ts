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
//
// It also gives the provider a fetch that recovers a stream which breaks
// off on the way: text is passed on as it comes, while tool calls and the
// message's end are held until the stream has ended whole (at most 4 MiB
// and five minutes), so OpenCode never runs half a tool batch. When the
// stream breaks, the same request is sent once more with
// `Cache-Control: only-if-cached`: Meridian answers it from the answer it
// saved, or with 504 and nothing run. The saved answer must begin with
// what was already shown (the same message, each text a prefix of its
// own); then only the rest is passed on. Otherwise the original failure
// stands: nothing is made up and nothing runs twice.
const oneShot = new Set(["title", "summary", "compaction"])

const maxHeld = 4 << 20
const maxHold = 5 * 60 * 1000

type Event = { raw: string; data: any }

// events splits server-sent events off the front of buf; rest is what is
// left of an event not yet whole.
function events(buf: string): { list: Event[]; rest: string } {
  const list: Event[] = []
  let at: number
  while ((at = buf.indexOf("\n\n")) >= 0) {
    const raw = buf.slice(0, at + 2)
    buf = buf.slice(at + 2)
    const line = raw.split("\n").find((l) => l.startsWith("data:"))
    let data: any = {}
    if (line) {
      try {
        data = JSON.parse(line.slice(5).trim())
      } catch {
        data = {}
      }
    }
    list.push({ raw, data })
  }
  return { list, rest: buf }
}

function sse(data: any): string {
  return `event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`
}

// deltaText is what a text or thinking block's delta adds to its text.
function deltaText(d: any): string {
  return d?.type === "text_delta" ? d.text ?? "" : d?.type === "thinking_delta" ? d.thinking ?? "" : ""
}

function isText(d: any): boolean {
  return d?.type === "text_delta" || d?.type === "thinking_delta"
}

// Shown is a text or thinking block as far as it was passed on.
type Shown = { kind: string; text: string; signed: boolean; stopped: boolean }

// rest is what the recovered stream adds to what was shown, as events;
// null when it does not continue what was shown: another message, or a
// block whose text does not begin with the text shown.
function rest(recovered: Event[], messageID: string, shown: Map<number, Shown>): string[] | null {
  if (messageID !== "" && !recovered.some((e) => e.data.type === "message_start" && e.data.message?.id === messageID)) return null
  // Each shown block's whole text, first.
  const full = new Map<number, string>()
  for (const { data } of recovered) {
    const s = shown.get(data.index)
    if (!s) continue
    if (data.type === "content_block_start") {
      if (data.content_block?.type !== s.kind) return null
      full.set(data.index, data.content_block?.text ?? data.content_block?.thinking ?? "")
    } else if (data.type === "content_block_delta" && isText(data.delta)) {
      full.set(data.index, (full.get(data.index) ?? "") + deltaText(data.delta))
    }
  }
  for (const [i, s] of shown) {
    const text = full.get(i)
    if (text === undefined || !text.startsWith(s.text) || (s.stopped && text !== s.text)) return null
  }
  // Then the events not passed on, a shown block's missing text first.
  const out: string[] = []
  const finished = new Set<number>()
  const finish = (i: number, s: Shown) => {
    if (finished.has(i)) return
    finished.add(i)
    const more = full.get(i)!.slice(s.text.length)
    if (more === "") return
    const delta = s.kind === "thinking" ? { type: "thinking_delta", thinking: more } : { type: "text_delta", text: more }
    out.push(sse({ type: "content_block_delta", index: i, delta }))
  }
  for (const { raw, data } of recovered) {
    const s = shown.get(data.index)
    switch (data.type) {
      case "message_start":
        if (messageID === "") out.push(raw)
        continue
      case "ping":
        continue
    }
    if (!s || data.type === "message_delta" || data.type === "message_stop") {
      out.push(raw)
      continue
    }
    if (s.stopped || data.type === "content_block_start" || isText(data.delta)) continue
    // A signature or the block's stop, after its missing text.
    finish(data.index, s)
    if (data.type === "content_block_delta" && s.signed) continue
    out.push(raw)
  }
  return out
}

// read is the next chunk of reader, or a failure once until has passed.
function read(reader: ReadableStreamDefaultReader<Uint8Array>, until: number): Promise<ReadableStreamReadResult<Uint8Array>> {
  if (until === 0) return reader.read()
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error("meridian: the stream's end did not come within five minutes")), Math.max(until - Date.now(), 0))
  })
  return Promise.race([reader.read(), late]).finally(() => clearTimeout(timer))
}

// recovering passes body on, holding tool calls and the end until the
// stream ends whole, and recovers a stream that breaks off through again.
function recovering(body: ReadableStream<Uint8Array>, again: () => Promise<Response>, signal?: AbortSignal | null): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder()
  const decoder = new TextDecoder()
  const reader = body.getReader()
  const shown = new Map<number, Shown>()
  let messageID = ""
  const held: string[] = []
  let heldBytes = 0
  let heldSince = 0
  let buf = ""
  let ended = false
  let failed = false
  return new ReadableStream<Uint8Array>({
    async pull(out) {
      try {
        if (signal?.aborted) throw signal.reason ?? new Error("aborted")
        const { done, value } = await read(reader, heldSince === 0 ? 0 : heldSince + maxHold)
        if (done) {
          buf += decoder.decode()
          if (!ended && !failed) throw new Error("meridian: the stream ended before its message did")
          for (const raw of held) out.enqueue(encoder.encode(raw))
          out.close()
          return
        }
        const got = events(buf + decoder.decode(value, { stream: true }))
        buf = got.rest
        for (const { raw, data } of got.list) {
          const i = data.index
          // Once something is held, what follows is held behind it.
          let pass = false
          if (data.type === "message_stop") ended = true
          if (data.type === "error") {
            // Meridian's own error ends the stream: it is passed on, and
            // half a tool batch held before it never is.
            failed = true
            held.length = 0
          }
          if (held.length === 0) switch (data.type) {
            case "error":
              pass = true
              break
            case "message_start":
              messageID = data.message?.id ?? ""
              pass = true
              break
            case "ping":
              pass = true
              break
            case "content_block_start": {
              const kind = data.content_block?.type
              if (kind === "text" || kind === "thinking") {
                shown.set(i, { kind, text: data.content_block?.text ?? data.content_block?.thinking ?? "", signed: false, stopped: false })
                pass = true
              }
              break
            }
            case "content_block_delta": {
              const s = shown.get(i)
              if (s && isText(data.delta)) {
                s.text += deltaText(data.delta)
                pass = true
              } else if (s && data.delta?.type === "signature_delta") {
                s.signed = true
                pass = true
              }
              break
            }
            case "content_block_stop":
              if (shown.has(i)) {
                shown.get(i)!.stopped = true
                pass = true
              }
              break
          }
          if (pass) {
            out.enqueue(encoder.encode(raw))
            continue
          }
          if (heldSince === 0) heldSince = Date.now()
          held.push(raw)
          heldBytes += raw.length
          if (heldBytes > maxHeld) throw new Error("meridian: a stream held more than 4 MiB before its end")
        }
      } catch (err) {
        reader.cancel(err).catch(() => {})
        if (signal?.aborted || failed) {
          out.error(err)
          return
        }
        let recovered: Response
        try {
          recovered = await again()
        } catch {
          out.error(err)
          return
        }
        if (!recovered.ok) {
          out.error(err)
          return
        }
        const parts = rest(events(await recovered.text()).list, messageID, shown)
        if (parts === null) {
          out.error(err)
          return
        }
        for (const raw of parts) out.enqueue(encoder.encode(raw))
        out.close()
      }
    },
    cancel(reason) {
      return reader.cancel(reason)
    },
  })
}

// recoveringFetch is the provider's fetch: a streamed Messages answer of
// a request with an id is passed through recovering, and a request whose
// connection broke before its answer began is asked for its saved answer
// once; anything else is fetch's own.
async function recoveringFetch(input: any, init?: any): Promise<Response> {
  const headers = new Headers(init?.headers)
  const identified = headers.get("x-meridian-request-id") !== null
  const again = () => {
    const h = new Headers(headers)
    h.set("cache-control", "only-if-cached")
    return fetch(input, { ...init, headers: h })
  }
  let res: Response
  try {
    res = await fetch(input, init)
  } catch (err) {
    if (!identified || init?.signal?.aborted) throw err
    const saved = await again().catch(() => null)
    if (saved?.ok) return saved
    throw err
  }
  if (!identified || !res.ok || !res.body || !(res.headers.get("content-type") ?? "").includes("text/event-stream")) {
    return res
  }
  return new Response(recovering(res.body, again, init?.signal), { status: res.status, statusText: res.statusText, headers: res.headers })
}

export const MeridianPlugin = async () => ({
  "chat.headers": async (input, output) => {
    if (input.model?.providerID !== "meridian") return
    output.headers["x-opencode-agent-name"] = input.agent
    output.headers["x-opencode-agent-mode"] = oneShot.has(input.agent) ? "subagent" : "primary"
    if (input.message?.id) {
      output.headers["x-meridian-request-id"] = `opencode/${input.sessionID}/${input.message.id}/${input.agent}`
    }
  },
  // OpenCode gives a provider the fetch of its plugin's loader when the
  // provider has a stored credential (`meridian setup opencode` stores
  // one that holds no key: the config's apiKey is what is sent).
  auth: {
    provider: "meridian",
    loader: async () => ({ fetch: recoveringFetch }),
    methods: [{ type: "api", label: "Meridian (the key in opencode.json is sent)" }],
  },
})
