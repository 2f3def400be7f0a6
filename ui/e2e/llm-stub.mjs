// A scripted OpenAI-compatible streaming LLM for `npm run e2e:real`: `tomo serve` talks to it instead of a
// real model, so the real session produces the reply of script.mjs. Every user turn is two requests, answered
// strictly in arrival order (one at a time) from an ordered script:
//   1. a `get_time` tool call (no text, so the tool chip shows before any subtitle, as in the stub mode);
//   2. "[angry] Hmm, let me check the time. [joy] It is noon, time for lunch!" in small SSE deltas with pauses,
//      so the browser can see the live line before the sentence commits and a test can drop the socket mid-turn.
// Every request body is recorded so the test can check what the real session sent.
import { createServer } from 'node:http';

const MODEL = 'scripted-model';

function chunk(delta, finishReason = null) {
  return {
    id: 'chatcmpl-tomo-e2e',
    object: 'chat.completion.chunk',
    created: 1_700_000_000,
    model: MODEL,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
  };
}

const usage = () => ({
  id: 'chatcmpl-tomo-e2e', object: 'chat.completion.chunk', created: 1_700_000_000, model: MODEL, choices: [],
  usage: { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 },
});

/** One scripted response: `[{wait}|{data}]` steps, ending with `[DONE]`. `n` numbers the tool call id. */
function toolRound(n) {
  return [
    { wait: 2 },
    { data: chunk({ role: 'assistant', content: '' }) },
    { data: chunk({ tool_calls: [{ index: 0, id: `call_${n}`, type: 'function', function: { name: 'get_time', arguments: '' } }] }) },
    { data: chunk({ tool_calls: [{ index: 0, function: { arguments: '{}' } }] }) },
    { data: chunk({}, 'tool_calls') },
    { data: usage() },
  ];
}

export const ANSWER_DELTAS = ['[angry] Hmm,', ' let me check', ' the time.', ' [joy] It', ' is noon,', ' time for lunch!'];

function answerRound() {
  const steps = [{ data: chunk({ role: 'assistant', content: '' }) }];
  for (const d of ANSWER_DELTAS) steps.push({ wait: 3 }, { data: chunk({ content: d }) });
  steps.push({ wait: 2 }, { data: chunk({}, 'stop') }, { data: usage() });
  return steps;
}

export async function startLlmStub({ delayMs = 100 } = {}) {
  const requests = []; // parsed bodies, in arrival order
  let served = 0;
  let queue = Promise.resolve(); // answers one request at a time, in order

  const http = createServer((req, res) => {
    if (req.method !== 'POST' || !req.url.endsWith('/chat/completions')) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `no route ${req.method} ${req.url}` } }));
      return;
    }
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      queue = queue.then(() => answer(body, res)).catch(() => undefined);
    });
  });

  async function answer(body, res) {
    let parsed;
    try {
      parsed = JSON.parse(body);
    } catch {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'request body is not JSON' } }));
      return;
    }
    requests.push(parsed);
    const index = served++;
    // Even requests open a turn (tool call), odd ones answer after the tool result.
    const steps = index % 2 === 0 ? toolRound(index / 2 + 1) : answerRound();
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    for (const s of steps) {
      if (s.wait) await new Promise((r) => setTimeout(r, s.wait * delayMs));
      else res.write(`data: ${JSON.stringify(s.data)}\n\n`);
    }
    res.end('data: [DONE]\n\n');
  }

  await new Promise((r) => http.listen(0, '127.0.0.1', r));
  const { port } = http.address();
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () => new Promise((r) => {
      http.closeAllConnections?.();
      http.close(r);
    }),
  };
}
