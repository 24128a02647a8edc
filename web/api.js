// The page's calls to the server: /v1/models and the streaming /v1/chat/completions.
// Errors come back as ApiError with the server's own message (OpenAI's error shape:
// {"error": {"message", "type", "code"}}) and the HTTP status, for readable notices.

export class ApiError extends Error {
  constructor(status, message, retryAfter) {
    super(message);
    this.status = status;          // HTTP status; 0 when the server could not be reached
    this.retryAfter = retryAfter;  // seconds, from Retry-After (429, 503), or null
  }
}

function headers(apiKey) {
  const h = { "Content-Type": "application/json" };
  if (apiKey) h.Authorization = "Bearer " + apiKey;
  return h;
}

async function errorFrom(response) {
  let message = response.statusText || "request failed";
  try {
    const body = await response.json();
    if (body && body.error && body.error.message) message = body.error.message;
  } catch {
    // not JSON: keep the status text
  }
  const retry = Number(response.headers.get("Retry-After"));
  return new ApiError(response.status, message, Number.isFinite(retry) && retry > 0 ? retry : null);
}

async function send(url, init) {
  let response;
  try {
    response = await fetch(url, init);
  } catch (error) {
    if (error.name === "AbortError") throw error;
    throw new ApiError(0, "The server cannot be reached (" + error.message + ").", null);
  }
  if (!response.ok) throw await errorFrom(response);
  return response;
}

// The served model: { id, maxModelLen } from GET /v1/models.
export async function fetchModel(apiKey) {
  const response = await send("/v1/models", { headers: headers(apiKey) });
  const body = await response.json();
  const card = body.data && body.data[0];
  if (!card) throw new ApiError(response.status, "The server lists no model.", null);
  return { id: card.id, maxModelLen: card.max_model_len || null };
}

// Streams one chat completion. `request` is the JSON body without "stream"; `onDelta(text)`
// runs for each piece of text as it arrives. Resolves to { finishReason, usage } when the
// stream ends ([DONE]). `signal` (an AbortController's) stops it: fetch then closes the
// connection, and the server, seeing its client leave, aborts the request in the engine
// at once, freeing its KV cache. The promise then rejects with an AbortError.
export async function streamChat(request, apiKey, signal, onDelta) {
  const body = { ...request, stream: true, stream_options: { include_usage: true } };
  const response = await send("/v1/chat/completions", {
    method: "POST", headers: headers(apiKey), body: JSON.stringify(body), signal,
  });
  const result = { finishReason: null, usage: null };
  await readEvents(response.body, (data) => {
    if (data === "[DONE]") return;
    const chunk = JSON.parse(data);
    if (chunk.error) throw new ApiError(500, chunk.error.message || "stream error", null);
    if (chunk.usage) result.usage = chunk.usage;
    for (const choice of chunk.choices || []) {
      const text = choice.delta && choice.delta.content;
      if (text) onDelta(text);
      if (choice.finish_reason) result.finishReason = choice.finish_reason;
    }
  });
  return result;
}

// The server-sent events reader. The body arrives in network-sized pieces that need not
// line up with events, nor even with UTF-8 characters: the TextDecoder in stream mode
// holds back an incomplete character, and `pending` holds the text after the last
// complete event. An event ends at a blank line (Pagoda writes "\n" line ends); its "data:" lines, joined by "\n",
// are its payload (other fields and ":" comments are ignored).
async function readEvents(stream, onData) {
  const reader = stream.getReader();
  const decoder = new TextDecoder("utf-8");
  let pending = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      pending += done ? decoder.decode() : decoder.decode(value, { stream: true });
      let end;
      while ((end = pending.indexOf("\n\n")) >= 0) {
        const event = pending.slice(0, end);
        pending = pending.slice(end + 2);
        const data = event.split("\n")
          .filter((line) => line.startsWith("data:"))
          .map((line) => line.slice(line.startsWith("data: ") ? 6 : 5));
        if (data.length > 0) onData(data.join("\n"));
      }
      if (done) return;
    }
  } finally {
    reader.releaseLock();
  }
}
